"""Incident querysets answer the questions the task, the sweep and the list page ask."""
from datetime import timedelta

from django.utils import timezone

from jobs.models import Incident
from tests.factories import make_incident


def _aged(incident, status, seconds):
    Incident.objects.filter(pk=incident.pk).update(status=status, updated_at=timezone.now() - timedelta(seconds=seconds))


def test_claimable_stale_and_overdue(alpha, settings):
    settings.TRIAGE_HEARTBEAT_S = 10
    queued, fresh, dead, done = (make_incident(alpha) for _ in range(4))
    _aged(queued, Incident.Status.QUEUED, 100)
    _aged(fresh, Incident.Status.DIAGNOSING, 5)
    _aged(dead, Incident.Status.DIAGNOSING, 31)
    _aged(done, Incident.Status.DIAGNOSED, 1000)

    assert set(Incident.objects.claimable()) == {queued, dead}
    assert set(Incident.objects.claimable(retrying=True)) == {queued, fresh, dead}
    assert list(Incident.objects.stale()) == [dead]
    assert list(Incident.objects.overdue(60)) == [queued]
    assert not Incident.objects.overdue(200).exists()


def test_search_reads_job_id_exception_summary_title_and_category_in_any_case(alpha):
    hit = make_incident(alpha, job_id="sft-2231", exception="KeyError", title="Night run", category="data_schema")
    make_incident(alpha, job_id="pretrain-7", exception="RuntimeError", title="Other", category="nccl_timeout")
    for text in ("SFT-22", "keyerror", "night", "DATA_schema"):
        assert list(Incident.objects.search(text)) == [hit]
    assert Incident.objects.search("").count() == 2
