"""The incident page follows a repro run live in real Chromium: status, elapsed time, log tail."""
import pytest
from django.utils import timezone

from repro.models import ReproRun
from tests.browser.conftest import log_in
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_page_streams_a_running_repro_until_it_finishes(browser_page, alice, alpha, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text())
    run = ReproRun.objects.create(incident=incident, kind="launch", status="running", started_at=timezone.now(),
                                  log_tail="[rank0] step 1/3 <b>not bold</b>")
    page = browser_page
    log_in(page, "alice")
    page.goto(f"/incidents/{incident.pk}/")
    section = page.locator("#repro-runs")
    section.get_by_text("step 1/3 <b>not bold</b>").wait_for()  # the tail, as text
    assert section.locator("[data-field=status]").inner_text() == "Running"
    page.wait_for_function("document.querySelector('#repro-runs [data-field=elapsed]') !== null")
    ReproRun.objects.filter(pk=run.pk).update(log_tail="[rank0] step 1/3\n[rank0] step 3/3\ntraining finished")
    section.get_by_text("training finished", exact=False).wait_for()
    ReproRun.objects.filter(pk=run.pk).update(status="reproduced", duration_s=6.2)
    page.wait_for_function(
        "document.querySelector('#repro-runs [data-field=status]').textContent === 'Reproduced'")
    assert section.locator("[data-field=elapsed]").inner_text() == "6.2 s"
    assert page.locator("#repro-runs b").count() == 0 and page.js_errors == []
