"""The diagnose task: claims once, saves the engine's verdict, and never leaves an incident diagnosing."""
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError

import triage
from jobs.models import Diagnosis, Incident
from jobs.signals import incident_finished
from jobs.tasks import MAX_RETRIES, diagnose_incident
from jobs.uploads import create_incident
from tests.jobs.upload_builders import upload

pytestmark = pytest.mark.django_db
# A rank running out of GPU memory under torchrun (written for these tests).
SEED_LOG = (
    b"[rank1]: Traceback (most recent call last):\n"
    b'[rank1]:   File "/srv/ft/train.py", line 88, in <module>\n'
    b"[rank1]:     loss.backward()\n"
    b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total "
    b"capacity of 79.10 GiB of which 310.00 MiB is free.\n"
    b"E1101 09:12:44 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1\n"
)
SEED_COMMAND = "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 16"


@pytest.fixture
def seed_incident(alice):
    return create_incident(team=alice.teams.get(), user=alice, logs=[upload("log.txt", SEED_LOG)],
                           command=SEED_COMMAND)


@pytest.fixture
def finished():
    seen = []

    def receiver(sender, incident, **kwargs):
        seen.append((incident.pk, incident.status))

    incident_finished.connect(receiver, weak=False)
    yield seen
    incident_finished.disconnect(receiver)


def engine_raises(monkeypatch, error):
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(triage, "diagnose", broken)


def test_it_diagnoses_the_seed_log_and_announces_it_on_commit(seed_incident, finished,
                                                             django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert diagnose_incident(seed_incident.pk) == "diagnosed"
    incident = Incident.objects.get(pk=seed_incident.pk)
    diagnosis = Diagnosis.objects.get(incident=incident)
    assert incident.status == "diagnosed" and incident.diagnosed_at is not None
    assert incident.category == diagnosis.category == diagnosis.data["category"] != ""
    assert incident.failing_rank == diagnosis.data["failing_rank"]
    assert incident.summary == diagnosis.data["summary"]
    assert diagnosis.engine_version == diagnosis.data["engine_version"]
    assert finished == [(incident.pk, "diagnosed")]


def test_it_does_nothing_when_the_task_is_delivered_twice(seed_incident):
    assert diagnose_incident(seed_incident.pk) == "diagnosed"
    first = Diagnosis.objects.get(incident=seed_incident)
    assert diagnose_incident(seed_incident.pk) == "skipped"
    assert Diagnosis.objects.filter(incident=seed_incident).count() == 1
    assert Diagnosis.objects.get(incident=seed_incident).created_at == first.created_at


def test_it_tolerates_a_deleted_incident(seed_incident):
    Incident.objects.filter(pk=seed_incident.pk).delete()
    assert diagnose_incident(seed_incident.pk) == "skipped"


def test_it_marks_the_incident_failed_when_the_engine_raises(seed_incident, monkeypatch, finished,
                                                             django_capture_on_commit_callbacks):
    engine_raises(monkeypatch, RuntimeError("rule registry exploded"))
    with django_capture_on_commit_callbacks(execute=True):
        assert diagnose_incident(seed_incident.pk) == "failed"
    incident = Incident.objects.get(pk=seed_incident.pk)
    assert incident.status == "failed" and "rule registry exploded" in incident.status_reason
    assert not Diagnosis.objects.exists()
    assert finished == [(incident.pk, "failed")]


def test_it_says_when_the_logs_could_not_be_read(seed_incident, monkeypatch):
    engine_raises(monkeypatch, triage.UnusableInput("cannot read archive logs.zip"))
    diagnose_incident(seed_incident.pk)
    incident = Incident.objects.get(pk=seed_incident.pk)
    assert incident.status == "failed" and "logs.zip" in incident.status_reason


def test_it_marks_the_incident_failed_at_the_soft_time_limit(seed_incident, monkeypatch, settings):
    engine_raises(monkeypatch, SoftTimeLimitExceeded())
    diagnose_incident(seed_incident.pk)
    incident = Incident.objects.get(pk=seed_incident.pk)
    assert incident.status == "failed" and "longer than" in incident.status_reason


def test_it_requeues_a_transient_database_error_for_a_retry(seed_incident, monkeypatch):
    engine_raises(monkeypatch, OperationalError("server closed the connection unexpectedly"))
    with pytest.raises(OperationalError):  # called directly, Celery re-raises instead of scheduling
        diagnose_incident(seed_incident.pk)
    assert Incident.objects.get(pk=seed_incident.pk).status == "queued"
    monkeypatch.undo()
    assert diagnose_incident(seed_incident.pk) == "diagnosed"


def test_it_gives_up_after_the_last_retry(seed_incident, monkeypatch):
    engine_raises(monkeypatch, OperationalError("server closed the connection unexpectedly"))
    Incident.objects.filter(pk=seed_incident.pk).update(status="diagnosing")  # as a crashed try would leave it
    result = diagnose_incident.apply(args=[seed_incident.pk], retries=MAX_RETRIES)
    assert result.get() == "failed"
    incident = Incident.objects.get(pk=seed_incident.pk)
    assert incident.status == "failed" and "retries" in incident.status_reason


def test_it_lays_a_log_dir_tree_out_for_the_engine(alice, monkeypatch):
    from tests.jobs.upload_builders import log_dir_tree, zip_bytes

    seen = {}

    def fake_diagnose(paths, **kwargs):
        from pathlib import Path

        seen["relative"] = sorted(kwargs["names"][path] for path in paths)
        seen["layout"] = all(Path(path).as_posix().endswith(kwargs["names"][path]) for path in paths)
        seen["config"] = [Path(path).read_bytes() for path in kwargs["config_paths"]]
        seen["command"] = kwargs["command"]
        raise triage.UnusableInput("stop here")

    incident = create_incident(team=alice.teams.get(), logs=[upload("run.zip", zip_bytes(log_dir_tree()))],
                               config=upload("ds.json", b"{}"), command="torchrun --nproc_per_node 2 train.py")
    monkeypatch.setattr(triage, "diagnose", fake_diagnose)
    diagnose_incident(incident.pk)
    assert seen == {"relative": sorted(log_dir_tree()), "layout": True, "config": [b"{}"],
                    "command": "torchrun --nproc_per_node 2 train.py"}


def test_it_marks_the_incident_failed_when_the_hard_time_limit_kills_the_task(seed_incident):
    from celery.exceptions import TimeLimitExceeded

    Incident.objects.filter(pk=seed_incident.pk).update(status="diagnosing")
    diagnose_incident.on_failure(TimeLimitExceeded(930), "task-id", (seed_incident.pk,), {}, None)
    incident = Incident.objects.get(pk=seed_incident.pk)
    assert incident.status == "failed" and "TimeLimitExceeded" in incident.status_reason


def test_it_reclaims_an_incident_a_dead_worker_left_diagnosing(seed_incident, settings):
    from datetime import timedelta

    from django.utils import timezone

    Incident.objects.filter(pk=seed_incident.pk).update(status="diagnosing", updated_at=timezone.now())
    assert diagnose_incident(seed_incident.pk) == "skipped"  # another worker may still be on it
    long_ago = timezone.now() - timedelta(seconds=settings.TRIAGE_DIAGNOSE_TIME_LIMIT * 2 + 600)
    Incident.objects.filter(pk=seed_incident.pk).update(updated_at=long_ago)
    assert diagnose_incident(seed_incident.pk) == "diagnosed"
