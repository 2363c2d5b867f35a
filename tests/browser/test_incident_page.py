"""Story: alice reads a 2-rank and a 256-rank incident in a real browser (screenshots for the reviewer)."""
import pytest

from tests.browser.conftest import log_in
from tests.pages.factories import (
    ORIGINAL_COMMAND,
    SMALL_COMMAND,
    add_artifact,
    node_log,
    sample_diagnosis,
    two_rank_log,
)

pytestmark = pytest.mark.browser


def wait_for_charts(page):
    page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
    page.wait_for_selector("#memory-chart .scatterlayer .trace", state="attached")
    timeline = page.locator("#timeline-chart .scatterlayer .trace").count()
    memory = page.locator("#memory-chart .scatterlayer .trace").count()
    return timeline, memory


def test_it_draws_a_two_rank_incident(browser_page, alice, alpha, make_incident, screenshots):
    page = browser_page
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2), command=SMALL_COMMAND, job_id="slurm-4242",
                             cluster="eu-a100")
    artifact = add_artifact(incident, "log.txt", two_rank_log())
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")

    card = page.locator("#verdict")
    assert "data_schema" in card.inner_text()
    assert card.locator(".headline").inner_text().startswith("Rank 1 ")
    assert "names rank 0, but rank 1 failed first" in card.inner_text()
    timeline, memory = wait_for_charts(page)
    assert timeline >= 4 and memory >= 2
    page.screenshot(path=str(screenshots / "incident-2-ranks.png"), full_page=True)

    copy = page.locator("#fixes button.copy").first
    copy.click()
    page.wait_for_function("document.querySelector('#fixes button.copy').textContent === 'Copied'")
    clipboard = page.evaluate("navigator.clipboard.readText()")
    assert clipboard.startswith("torchrun --nproc_per_node=2 train_tiny.py")

    page.click("#evidence a.log-link >> nth=0")
    page.wait_for_url(f"**/artifacts/{artifact.pk}/?line=6*")
    hit = page.locator("#L6")
    assert hit.is_visible() and "KeyError" in hit.inner_text()
    assert "hit" in hit.get_attribute("class")
    page.screenshot(path=str(screenshots / "log-viewer.png"))

    page.fill("#log-q", "SIGTERM")
    page.press("#log-q", "Enter")
    page.wait_for_selector(".matches li")
    assert "line 8" in page.locator(".matches").inner_text()
    assert page.js_errors == []


def test_it_keeps_256_ranks_readable(browser_page, alice, alpha, make_incident, screenshots):
    page = browser_page
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256), command=ORIGINAL_COMMAND, job_id="slurm-256",
                             cluster="us-h100")
    add_artifact(incident, "node17.log", node_log())
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")

    assert page.locator("#verdict .headline").inner_text().startswith("Rank 137 ")
    timeline, memory = wait_for_charts(page)
    assert timeline >= 5 and memory >= 5
    lanes = page.locator("#timeline-chart .ytick text").all_text_contents()
    assert len(lanes) < 12
    assert any("first failure" in lane for lane in lanes)
    assert page.locator("#fixes ins").count() >= 1
    page.screenshot(path=str(screenshots / "incident-256-ranks.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    wait_for_charts(page)
    page.screenshot(path=str(screenshots / "incident-256-ranks-phone.png"), full_page=False)
    assert page.js_errors == []


def test_the_list_filters_in_the_browser(browser_page, alice, alpha, make_incident, screenshots):
    page = browser_page
    make_incident(alpha, diagnosis=sample_diagnosis(2), job_id="slurm-4242", cluster="eu-a100")
    make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5), job_id="slurm-7777", cluster="us-h100")
    make_incident(alpha, job_id="slurm-9999")
    log_in(page, "alice")
    page.goto("/")
    assert page.locator("table.incidents tbody tr").count() == 3
    page.screenshot(path=str(screenshots / "incident-list.png"), full_page=True)
    page.select_option("#f-category", "gpu_oom")
    page.click(".filters button[type=submit]")
    page.wait_for_url("**category=gpu_oom*")
    rows = page.locator("table.incidents tbody tr")
    assert rows.count() == 1 and "slurm-7777" in rows.inner_text()
