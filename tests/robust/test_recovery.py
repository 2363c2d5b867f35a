"""Exactly once, always: the sweep re-enqueues what the broker lost, a dead worker's incident is
taken over after its heartbeat stops, a lost pool child marks the attempt, and a worker that lost
its claim saves nothing."""
from datetime import timedelta

import pytest
from celery.exceptions import WorkerLostError
from celery.signals import task_failure
from django.utils import timezone

from jobs import tasks
from jobs.models import Diagnosis, Incident
from jobs.uploads import create_incident
from tests.jobs.upload_builders import RANK_LOG, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks.diagnose_incident, "apply_async",
                        lambda args, **options: calls.append((args[0], options)))
    return calls


@pytest.fixture
def incident(alice, sent):
    made = create_incident(team=alice.teams.get(), logs=[upload("rank1.log", RANK_LOG)], enqueue=False)
    return made


def age(pk, seconds):
    Incident.objects.filter(pk=pk).update(updated_at=timezone.now() - timedelta(seconds=seconds))


def test_messages_carry_no_time_limits_so_the_worker_uses_its_own(incident, sent):
    assert tasks.enqueue_diagnosis(incident.pk) is True
    assert sent == [(incident.pk, {"time_limit": None, "soft_time_limit": None})]


def test_a_failed_enqueue_keeps_the_incident_queued_for_the_sweep(incident, monkeypatch, settings):
    def broker_down(*args, **kwargs):
        raise ConnectionRefusedError("redis is down")

    monkeypatch.setattr(tasks.diagnose_incident, "apply_async", broker_down)
    assert tasks.enqueue_diagnosis(incident.pk) is False
    age(incident.pk, settings.TRIAGE_QUEUED_DEADLINE_S + 5)
    assert tasks.sweep()["reenqueued"] == 0  # still down: nothing sent, the next sweep tries again
    assert Incident.objects.get(pk=incident.pk).status == "queued"


def test_the_sweep_re_enqueues_incidents_queued_past_their_deadline_once_per_deadline(incident, sent, settings):
    assert tasks.sweep()["reenqueued"] == 0  # fresh: its own message may still be on its way
    age(incident.pk, settings.TRIAGE_QUEUED_DEADLINE_S + 5)
    assert tasks.sweep()["reenqueued"] == 1
    assert tasks.sweep()["reenqueued"] == 0  # touched: the next try waits another deadline
    assert [pk for pk, _ in sent] == [incident.pk]


def test_a_dead_workers_incident_is_requeued_then_failed_after_repeated_losses(incident, sent, settings):
    for attempt in range(1, tasks.MAX_LOST_ATTEMPTS):
        assert tasks.claim(incident.pk, retrying=False)
        assert tasks.claim(incident.pk, retrying=False) is None  # the heartbeat is fresh: nobody takes it
        age(incident.pk, 3 * settings.TRIAGE_HEARTBEAT_S + 5)
        assert tasks.sweep()["requeued_dead"] == 1
        row = Incident.objects.get(pk=incident.pk)
        assert row.status == "queued" and row.status_reason.startswith(f"Attempt {attempt} was lost")
    assert tasks.claim(incident.pk, retrying=False)
    age(incident.pk, 3 * settings.TRIAGE_HEARTBEAT_S + 5)
    assert tasks.sweep()["failed_dead"] == 1
    row = Incident.objects.get(pk=incident.pk)
    assert row.status == "failed" and f"lost {tasks.MAX_LOST_ATTEMPTS} times" in row.status_reason


def test_a_lost_pool_child_marks_the_attempt_and_enqueues_again(incident, sent):
    assert tasks.claim(incident.pk, retrying=False)
    task_failure.send(sender=tasks.diagnose_incident, task_id="t1", exception=WorkerLostError("signal 9 (SIGKILL)"),
                      args=[incident.pk], kwargs={}, traceback=None, einfo=None)
    row = Incident.objects.get(pk=incident.pk)
    assert row.status == "queued" and "signal 9" in row.status_reason
    assert [pk for pk, _ in sent] == [incident.pk]
    assert tasks.diagnose_incident(incident.pk) == "diagnosed"
    assert Incident.objects.get(pk=incident.pk).status_reason == ""


def test_a_worker_that_lost_its_claim_saves_nothing(incident, settings):
    first = tasks.claim(incident.pk, retrying=False)
    age(incident.pk, 3 * settings.TRIAGE_HEARTBEAT_S + 5)
    second = tasks.claim(incident.pk, retrying=False)  # the first worker looked dead
    assert first and second and first != second
    assert tasks.save_diagnosis(incident.pk, {"category": "gpu_oom"}, token=first) is False
    assert not Diagnosis.objects.exists()
    assert tasks.save_diagnosis(incident.pk, {"category": "gpu_oom"}, token=second) is True
    assert Diagnosis.objects.get().category == "gpu_oom"


def test_a_lost_webhook_message_is_sent_again_and_a_duplicate_posts_nothing(alpha, make_incident, monkeypatch):
    from jobs import webhooks
    from jobs.models import WebhookDelivery

    incident = make_incident(alpha, callback_url="https://93.184.215.14/hook")
    delivery = WebhookDelivery.objects.create(incident=incident, url=incident.callback_url)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        created_at=timezone.now() - timedelta(seconds=webhooks.LOST_AFTER_S + 5))
    resent = []
    monkeypatch.setattr(webhooks.deliver_webhook, "delay", lambda *args: resent.append(args))
    assert webhooks.sweep_deliveries() == 1 and resent == [(delivery.pk, 0)]

    posts, duplicate = [], []

    def receiver(*args, **kwargs):  # while the first copy posts, a second copy of the message runs
        posts.append(args)
        if not duplicate:
            duplicate.append(webhooks.deliver_webhook.apply(args=[delivery.pk]).get())
        return 204

    monkeypatch.setattr(webhooks, "check_url", lambda url: ["93.184.215.14"])
    monkeypatch.setattr(webhooks, "post", receiver)
    assert webhooks.deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
    assert duplicate == ["skipped"] and len(posts) == 1
    assert WebhookDelivery.objects.get(pk=delivery.pk).attempts == 1
