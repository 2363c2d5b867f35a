"""Story: alice uploads a 2-rank torchrun log, watches the diagnosis progress, and reads the verdict."""
import re

import pytest

import jobs.tasks
import jobs.uploads
from jobs.models import Incident
from tests.browser.conftest import log_in
from tests.conftest import SEED_CASE

pytestmark = pytest.mark.browser
CASE = SEED_CASE


def test_it_uploads_and_shows_live_progress_then_the_verdict(browser_page, alice, monkeypatch, screenshots):
    page = browser_page
    queued = []
    # The test plays the Celery worker: nothing goes to the broker.
    monkeypatch.setattr(jobs.uploads, "_enqueue", queued.append)

    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.set_input_files("#upload-form input[type=file][name=logs]", [str(CASE / "log.txt")])
    assert "log.txt" in page.locator("#upload-file-list").inner_text()
    page.fill("#upload-form [name=command]", (CASE / "command.txt").read_text().strip())
    page.fill("#upload-form [name=job_id]", "cpu-data-schema-tee")
    page.click("#upload-form [type=submit]")
    page.wait_for_url(re.compile(r"/incidents/\d+/$"))

    incident = Incident.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert incident.job_id == "cpu-data-schema-tee"
    assert queued == [incident.pk]
    assert page.locator("#progress [data-status-badge], [data-status-badge]").first.inner_text() == "Queued"

    real_engine = jobs.tasks.run_engine

    def engine_while_the_page_watches(row):
        # The worker has claimed the row: the open page must show it without a reload.
        page.wait_for_selector("#progress li.current[data-step=diagnosing]")
        assert page.locator("[data-status-badge]").first.inner_text() == "Diagnosing"
        return real_engine(row)

    monkeypatch.setattr(jobs.tasks, "run_engine", engine_while_the_page_watches)
    jobs.tasks.diagnose_incident(incident.pk)
    incident.refresh_from_db()
    assert incident.status == "diagnosed", incident.status_reason

    page.wait_for_selector("#verdict", timeout=20_000)
    assert "data_schema" in page.locator("#verdict").inner_text()
    assert page.locator("#verdict .headline").inner_text().startswith("Rank 1 ")
    page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
    page.screenshot(path=str(screenshots / "incident-uploaded.png"), full_page=True)
    assert page.js_errors == []


def test_it_shows_the_servers_error_next_to_the_field(browser_page, alice, screenshots):
    page = browser_page
    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.click("#upload-form [type=submit]")  # nothing chosen: the server refuses
    error = page.locator("#upload-form .field-error").first
    error.wait_for()
    assert error.inner_text().strip()
    assert "/incidents/new/" in page.url
    page.screenshot(path=str(screenshots / "upload-error.png"), full_page=True)


def test_it_uploads_files_dropped_on_the_drop_zone(browser_page, alice, monkeypatch):
    page = browser_page
    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    log_in(page, "alice")
    page.goto("/incidents/new/")
    page.evaluate("""() => {
        const transfer = new DataTransfer();
        transfer.items.add(new File(["[rank0]: starting\\n"], "rank0.log", {type: "text/plain"}));
        transfer.items.add(new File(["[rank1]: KeyError: 'conversations'\\n"], "rank1.log", {type: "text/plain"}));
        const zone = document.getElementById("drop-zone");
        zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: transfer, bubbles: true, cancelable: true}));
        zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true, cancelable: true}));
    }""")
    listed = page.locator("#upload-file-list").inner_text()
    assert "rank0.log" in listed and "rank1.log" in listed
    page.click("#upload-form [type=submit]")
    page.wait_for_url(re.compile(r"/incidents/\d+/$"))
    incident = Incident.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert sorted(a.original_name for a in incident.artifacts.all()) == ["rank0.log", "rank1.log"]


def test_a_slow_upload_shows_its_progress(browser_page, alice, monkeypatch, tmp_path):
    page = browser_page
    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    big = tmp_path / "rank0.log"
    big.write_text("".join(f"[rank0]: step {n} loss=1.0\n" for n in range(60_000)))  # ~1.5 MB
    log_in(page, "alice")
    page.goto("/incidents/new/")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 50, "downloadThroughput": -1,
                                                  "uploadThroughput": 300 * 1024})
    page.set_input_files("#upload-form input[type=file][name=logs]", [str(big)])
    page.click("#upload-form [type=submit]")
    page.wait_for_function("document.querySelector('progress.upload-progress') && "
                           "!document.querySelector('progress.upload-progress').hidden && "
                           "/Uploading… \\d+%/.test(document.getElementById('upload-message').textContent)")
    page.wait_for_url(re.compile(r"/incidents/\d+/$"), timeout=60_000)
