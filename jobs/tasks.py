"""Celery tasks: thin. Load the row, call the engine, save the result.

The incident row is the source of truth; a broker message is only a wake-up call. So:
- diagnose_incident claims the incident with a conditional update (queued -> diagnosing, or a
  diagnosing row whose heartbeat stopped); the claim's token is the `updated_at` it wrote. A
  second delivery of the same message does nothing, and a worker that lost its claim saves nothing.
- while it works, a heartbeat thread moves `updated_at` on every TRIAGE_HEARTBEAT_S seconds with a
  compare-and-set on the token; a row whose heartbeat is older than three beats belongs to a dead
  worker (kill -9, OOM killer).
- a pool child killed mid-diagnosis (WorkerLostError) marks the attempt and requeues the incident,
  up to MAX_LOST_ATTEMPTS, then fails it with the reason (the same input keeps killing workers).
- sweep_incidents (Celery beat) re-enqueues incidents queued or diagnosing past their deadline:
  a failed enqueue (broker down at submit), a lost message, a dead worker.
- time limits are the worker's own settings: messages carry none.
Every way out of `diagnosing` is explicit: diagnosed, failed (with the reason), or back to queued.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path, PurePosixPath

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded, WorkerLostError
from celery.signals import task_failure
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection, transaction
from django.db.models import Case, F, TextField, Value, When
from django.utils import timezone

import triage
from jobs import logindex
from jobs.limits import upload_limits
from jobs.models import Artifact, Diagnosis, Incident
from jobs.signals import diagnosis_saved, incident_finished
from jobs.staging import sweep_orphans, work_root

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS = (OperationalError, InterfaceError)
MAX_RETRIES = 5
HARD_LIMIT_GRACE_S = 30


MAX_LOST_ATTEMPTS = 3
_LOST = re.compile(r"^Attempt (\d+) was lost")


class DiagnoseTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Also called in the worker's main process when the hard time limit killed the child."""
        incident_pk = args[0] if args else kwargs.get("incident_pk")
        try:
            mark_failed(incident_pk, f"The diagnosis stopped: {type(exc).__name__}: {exc}",
                        only_from=Incident.Status.DIAGNOSING)
        except Exception:  # noqa: BLE001 - nothing more to do; the stale claim below recovers it
            logger.exception("could not mark incident %s failed", incident_pk)


def heartbeat_s() -> int:
    return settings.TRIAGE_HEARTBEAT_S


def claim(incident_pk: int, retrying: bool):
    """Take the incident for this worker; return the claim token (the `updated_at` written), or
    None when someone else has it."""
    token = timezone.now()
    keep_lost_note = Case(When(status_reason__regex=_LOST.pattern, then=F("status_reason")), default=Value(""),
                          output_field=TextField())
    claimed = Incident.objects.claimable(retrying).filter(pk=incident_pk).update(
        status=Incident.Status.DIAGNOSING, status_reason=keep_lost_note, updated_at=token)
    return token if claimed else None


def holding(incident_pk: int, token):
    return Incident.objects.filter(pk=incident_pk, status=Incident.Status.DIAGNOSING, updated_at=token)


class Heartbeat(threading.Thread):
    """Moves the claimed row's `updated_at` on while the engine runs (compare-and-set on the token),
    so a live diagnosis is never taken over; `token` is the current claim after stop()."""

    def __init__(self, incident_pk: int, token):
        super().__init__(name=f"heartbeat-{incident_pk}", daemon=True)
        self.incident_pk, self.token = incident_pk, token
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        try:
            while not self.stopped.wait(heartbeat_s()):
                beat = timezone.now()
                try:
                    if not holding(self.incident_pk, self.token).update(updated_at=beat):
                        self.lost = True
                        return
                    self.token = beat
                except TRANSIENT_ERRORS:
                    logger.warning("heartbeat of incident %s missed: database unavailable", self.incident_pk)
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive():
            self.join(timeout=5)


@shared_task(
    bind=True, base=DiagnoseTask, name="jobs.tasks.diagnose_incident", acks_late=True,  # queue: task routes
    # The worker's own settings: enqueue_diagnosis sends messages without limits of their own.
    soft_time_limit=settings.TRIAGE_DIAGNOSE_TIME_LIMIT,
    time_limit=settings.TRIAGE_DIAGNOSE_TIME_LIMIT + HARD_LIMIT_GRACE_S,
    max_retries=MAX_RETRIES,
    reject_on_worker_lost=False,  # a lost child is handled by record_lost_worker, not by redelivery
)
def diagnose_incident(self, incident_pk: int) -> str:
    token = claim(incident_pk, bool(self.request.retries))
    if token is None:
        return "skipped"
    beat = Heartbeat(incident_pk, token)
    beat.start()
    try:
        diagnosis = run_engine(Incident.objects.get(pk=incident_pk))
        beat.stop()
        if not save_diagnosis(incident_pk, diagnosis, token=beat.token):
            return "skipped"
        logindex.build_for_incident(incident_pk)  # the log viewer's seeks; never raises
        return "diagnosed"
    except SoftTimeLimitExceeded:
        mark_failed(incident_pk, f"The diagnosis took longer than {settings.TRIAGE_DIAGNOSE_TIME_LIMIT} s.")
        return "failed"
    except TRANSIENT_ERRORS as exc:
        if self.request.retries >= MAX_RETRIES:
            mark_failed(incident_pk, f"Database unavailable after {MAX_RETRIES} retries: {exc}")
            return "failed"
        requeue(incident_pk)
        raise self.retry(exc=exc, countdown=min(2 ** (self.request.retries + 1), 60),
                         time_limit=None, soft_time_limit=None) from exc
    except triage.UnusableInput as exc:
        mark_failed(incident_pk, f"The logs could not be read: {exc}")
        return "failed"
    except Exception as exc:  # the engine's bug must not leave the incident diagnosing forever
        logger.exception("diagnosis of incident %s failed", incident_pk)
        mark_failed(incident_pk, f"The engine failed: {type(exc).__name__}: {exc}")
        return "failed"
    finally:
        beat.stop()


def enqueue_diagnosis(incident_pk: int) -> bool:
    """Send the wake-up call; False (logged) when the broker cannot take it. The sweep retries."""
    try:
        diagnose_incident.apply_async((incident_pk,), time_limit=None, soft_time_limit=None)
        return True
    except Exception:  # noqa: BLE001 - broker down: the incident stays queued for the sweep
        logger.warning("could not enqueue incident %s; the sweep will", incident_pk, exc_info=True)
        return False


@task_failure.connect(dispatch_uid="jobs.tasks.record_lost_worker")
def record_lost_worker(sender=None, exception=None, args=None, kwargs=None, **_ignored):
    """A pool child died mid-diagnosis (kill -9, the OOM killer): mark the attempt, then retry or fail.

    Runs in the worker's main process, where Celery reports the WorkerLostError.
    """
    if getattr(sender, "name", None) != diagnose_incident.name or not isinstance(exception, WorkerLostError):
        return
    incident_pk = (args or [None])[0] if args else (kwargs or {}).get("incident_pk")
    if incident_pk is None:
        return
    if not connection.in_atomic_block:  # the main process's connection may be hours old
        close_old_connections()
    try:
        if lost_attempt(incident_pk, f"the worker process died ({exception})"):
            enqueue_diagnosis(incident_pk)
    except Exception:  # noqa: BLE001 - the sweep recovers the incident when this cannot
        logger.exception("could not record the lost attempt of incident %s", incident_pk)


def lost_attempt(incident_pk: int, why: str) -> bool:
    """Record a lost attempt of a diagnosing incident; True when it was requeued, False when failed
    (or not diagnosing any more)."""
    with transaction.atomic():
        incident = Incident.objects.select_for_update().filter(
            pk=incident_pk, status=Incident.Status.DIAGNOSING).first()
        if incident is None:
            return False
        previous = _LOST.match(incident.status_reason)
        attempt = int(previous.group(1)) + 1 if previous else 1
        if attempt >= MAX_LOST_ATTEMPTS:
            incident.status = Incident.Status.FAILED
            incident.status_reason = (f"The diagnosis was lost {attempt} times: {why}. The logs may need more "
                                      "memory than a worker has; retry with fewer or smaller files.")
            incident.save(update_fields=["status", "status_reason", "updated_at"])
            transaction.on_commit(lambda: announce(incident_pk))
            return False
        incident.status = Incident.Status.QUEUED
        incident.status_reason = f"Attempt {attempt} was lost: {why}; retrying."
        incident.save(update_fields=["status", "status_reason", "updated_at"])
        return True


def sweep(queued_deadline_s: int | None = None) -> dict[str, int]:
    """Re-enqueue incidents queued past their deadline and recover those a dead worker left."""
    deadline = settings.TRIAGE_QUEUED_DEADLINE_S if queued_deadline_s is None else queued_deadline_s
    counts = {"requeued_dead": 0, "failed_dead": 0, "reenqueued": 0}
    for incident_pk in Incident.objects.stale().values_list("pk", flat=True)[:500]:
        if lost_attempt(incident_pk, "the worker stopped answering (killed or lost)"):
            counts["requeued_dead"] += 1
        else:
            counts["failed_dead"] += 1
    for incident_pk in Incident.objects.overdue(deadline).values_list("pk", flat=True)[:500]:
        if not enqueue_diagnosis(incident_pk):
            break  # the broker is still down: the next sweep tries again
        # Touch the row so that the next sweep waits another deadline before sending again.
        Incident.objects.filter(pk=incident_pk, status=Incident.Status.QUEUED).update(updated_at=timezone.now())
        counts["reenqueued"] += 1
    from jobs.webhooks import sweep_deliveries

    counts["webhooks_reenqueued"] = sweep_deliveries()
    if any(counts.values()):
        logger.info("incident sweep: %s", counts)
    return counts


@shared_task(name="jobs.tasks.sweep_incidents", ignore_result=True, soft_time_limit=60, time_limit=90)
def sweep_incidents() -> dict:
    return sweep()


@shared_task(name="jobs.tasks.sweep_orphan_files", ignore_result=True, soft_time_limit=600, time_limit=660)
def sweep_orphan_files() -> dict:
    removed = sweep_orphans()
    removed["log_indexes"] = logindex.sweep_stale()
    return removed


def layout(incident: Incident, folder: Path) -> dict:
    """Lay the artifacts out in `folder` under their original relative names (a torchrun --log-dir tree).

    Local storage is linked, not copied: logs reach gigabytes, and the engine only reads them.
    """
    logs, names, configs, data = [], {}, [], None
    for artifact in incident.artifacts.all():
        relative = PurePosixPath(artifact.original_name.replace("\\", "/"))
        parts = [part for part in relative.parts if part not in ("", ".", "..", "/")] or [f"artifact-{artifact.pk}"]
        target = folder / artifact.kind / Path(*parts)
        if target.exists():  # two uploads with one name: keep both
            target = folder / artifact.kind / f"dup-{artifact.pk}" / Path(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        place(artifact, target)
        if artifact.kind == Artifact.Kind.CONFIG:
            configs.append(str(target))
        elif artifact.kind == Artifact.Kind.DATA_SAMPLE:
            data = data or str(target)
        elif artifact.kind == Artifact.Kind.LOG:
            logs.append(str(target))
            names[str(target)] = artifact.original_name
    return {"paths": logs, "names": names, "config_paths": configs, "data_path": data}


def place(artifact: Artifact, target: Path) -> None:
    try:
        stored = artifact.file.path  # storages without local files (S3) raise NotImplementedError
    except NotImplementedError:
        stored = None
    if stored is not None:
        os.symlink(stored, target)
        return
    with artifact.file.open("rb") as source, open(target, "wb") as handle:
        shutil.copyfileobj(source, handle, 1024 * 1024)


def run_engine(incident: Incident) -> dict:
    """Run triage.diagnose over the incident's artifacts; return the CONTRACT JSON."""
    folder = Path(tempfile.mkdtemp(prefix=f"incident-{incident.pk}-", dir=work_root()))
    try:
        inputs = layout(incident, folder)
        if not inputs["paths"]:
            raise triage.UnusableInput("the incident has no log files")
        result = triage.diagnose(
            inputs["paths"], command=incident.command or None, config_paths=inputs["config_paths"],
            data_path=inputs["data_path"], limits=upload_limits(), names=inputs["names"],
        )
        return result.to_dict() if hasattr(result, "to_dict") else dict(result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def save_diagnosis(incident_pk: int, data: dict, token=None) -> bool:
    """Store the verdict; False (nothing stored) when `token` no longer holds the claim."""
    root_cause = data.get("root_cause") or {}
    with transaction.atomic():
        rows = holding(incident_pk, token) if token else Incident.objects.filter(pk=incident_pk)
        incident = rows.select_for_update().first()
        if incident is None:
            logger.warning("incident %s was taken over while this worker diagnosed it; result dropped", incident_pk)
            return False
        saved, _ = Diagnosis.objects.update_or_create(incident=incident, defaults={
            "engine_version": str(data.get("engine_version") or getattr(triage, "ENGINE_VERSION", ""))[:20],
            "data": data,
            "category": str(data.get("category") or "unknown")[:40],
            "failing_rank": data.get("failing_rank"),
            "fingerprint": str(data.get("fingerprint") or "")[:64],
        })
        diagnosis_saved.send(sender=Diagnosis, incident=incident, diagnosis=saved)
        incident.category = str(data.get("category") or "unknown")[:40]
        incident.exception = str(root_cause.get("exception") or "")[:200]
        incident.failing_rank = data.get("failing_rank")
        incident.summary = data.get("summary") or ""
        incident.launcher = str(data.get("launcher") or "")[:30]
        incident.world_size = data.get("world_size") if isinstance(data.get("world_size"), int) else None
        incident.status, incident.status_reason = Incident.Status.DIAGNOSED, ""
        incident.diagnosed_at = timezone.now()
        incident.save()
        transaction.on_commit(lambda: announce(incident_pk))
    return True


def mark_failed(incident_pk: int, reason: str, only_from: str | None = None) -> None:
    rows = Incident.objects.filter(pk=incident_pk).exclude(status=Incident.Status.DIAGNOSED)
    if only_from:
        rows = rows.filter(status=only_from)
    with transaction.atomic():
        updated = rows.update(
            status=Incident.Status.FAILED, status_reason=reason[:2000], updated_at=timezone.now()
        )
        if updated:
            transaction.on_commit(lambda: announce(incident_pk))


def requeue(incident_pk: int) -> None:
    """Best effort: the database may be the thing that is down."""
    try:
        Incident.objects.filter(pk=incident_pk, status=Incident.Status.DIAGNOSING).update(
            status=Incident.Status.QUEUED, status_reason="", updated_at=timezone.now()
        )
    except TRANSIENT_ERRORS:
        logger.warning("could not requeue incident %s; the retry will reclaim it", incident_pk)


def announce(incident_pk: int) -> None:
    incident = Incident.objects.filter(pk=incident_pk).first()
    if incident is None:
        return
    for receiver, outcome in incident_finished.send_robust(sender=Incident, incident=incident):
        if isinstance(outcome, Exception):
            logger.error("incident_finished receiver %r failed: %r", receiver, outcome, exc_info=outcome)
