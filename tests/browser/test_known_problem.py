"""Story: alice resolves a data bug; the same failure comes back from another machine and path, the
incident page says it is a known problem with her resolution, and she finds it again by its message."""
import re

import pytest

import jobs.tasks
import jobs.uploads
from jobs.models import Incident
from knowledge.models import Problem
from tests.browser.conftest import log_in
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.browser
CASE = REPO_ROOT / "tests" / "fixtures" / "cpu_runs" / "cpu-data-schema-tee"


def upload(page, log_path, job_id, cluster) -> Incident:
    page.goto("/incidents/new/")
    page.set_input_files("#upload-form input[type=file][name=logs]", [str(log_path)])
    page.fill("#upload-form [name=command]", (CASE / "command.txt").read_text().strip())
    page.fill("#upload-form [name=job_id]", job_id)
    page.fill("#upload-form [name=cluster]", cluster)
    page.click("#upload-form [type=submit]")
    page.wait_for_url(re.compile(r"/incidents/\d+/$"))
    incident = Incident.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert jobs.tasks.diagnose_incident(incident.pk) == "diagnosed"  # the test plays the Celery worker
    page.wait_for_selector("#verdict")
    return incident


def test_a_resolved_failure_is_recognised_when_it_comes_back(browser_page, alice, monkeypatch, tmp_path, screenshots):
    page = browser_page
    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    log_in(page, "alice")

    first = upload(page, CASE / "log.txt", "sft-0001", "cpu-box-1")
    assert "First time the team sees this failure" in page.locator("#known-problem").inner_text()
    page.click("#known-problem a:has-text('problem #')")
    page.wait_for_selector("#resolution form")
    page.select_option("#id_status", "resolved")
    page.fill("#id_resolution", "Mixed **alpaca** rows in the ShareGPT file: converted them with `triage convert-data`.")
    page.select_option("#id_fix_choice", index=2)  # the first fix the engine suggested
    page.click("#resolution form button[type=submit]")
    page.wait_for_selector(".messages li:has-text('Saved.')")
    assert "alpaca" in page.locator("#resolution .markdown strong").inner_text()
    page.wait_for_selector("#occurrence-chart[data-ready='1'] .main-svg", state="attached")

    # The same failure again, from another user's directory on another machine, ranks on another port.
    rerun = (CASE / "log.txt").read_text()
    rerun = rerun.replace("/tmp/ft/sft/", "/scratch/mira/exp42/").replace("127.0.0.1]:58033", "10.4.7.21]:41877")
    rerun = rerun.replace("localhost", "gpu-node-17").replace("21:23:", "08:51:")
    (tmp_path / "rerun.log").write_text(rerun)
    second = upload(page, tmp_path / "rerun.log", "sft-0002", "h100-east")
    banner = page.locator("#known-problem")
    assert "Known problem" in banner.inner_text() and "seen before: 1 time" in banner.inner_text()
    assert "Mixed alpaca rows in the ShareGPT file" in banner.inner_text()
    assert "by alice" in banner.inner_text()
    assert Problem.objects.get(incidents=second) == Problem.objects.get(incidents=first)
    assert Problem.objects.get(incidents=second).status == "regressed"  # resolved, then seen again
    page.screenshot(path=str(screenshots / "known-problem-banner.png"), full_page=True)

    # A week later: alice remembers the message, not the job.
    page.goto("/knowledge/search/")
    page.fill("#f-q", "conversations")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#search-incidents")
    incidents = page.locator("#search-incidents").inner_text()
    assert "sft-0001" in incidents and "sft-0002" in incidents
    assert "Mixed alpaca" not in incidents
    problems = page.locator("#search-problems").inner_text()
    assert "KeyError: 'conversations'" in problems
    page.click("#search-problems a:has-text('KeyError')")
    page.wait_for_selector("#story")
    assert "h100-east" in page.locator("#story").inner_text() and "sft-0002" in page.locator("#story").inner_text()
    assert "Regressed" in page.locator(".regressed-note").inner_text()
    page.wait_for_selector("#occurrence-chart[data-ready='1'] .main-svg", state="attached")
    page.screenshot(path=str(screenshots / "problem-page.png"), full_page=True)
    assert page.js_errors == []
