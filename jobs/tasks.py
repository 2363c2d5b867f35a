"""Celery tasks: thin. Load the row, call the engine, save the result.

diagnose_incident claims the incident with a conditional update (queued -> diagnosing), so a
second delivery of the same message does nothing. Every way out of `diagnosing` is explicit:
diagnosed, failed (with the reason), or back to queued for a retry of a transient database error.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path, PurePosixPath

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

import triage
from jobs.models import Artifact, Diagnosis, Incident
from jobs.signals import diagnosis_saved, incident_finished
from jobs.uploads import upload_limits

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS = (OperationalError, InterfaceError)
MAX_RETRIES = 5
HARD_LIMIT_GRACE_S = 30


class DiagnoseTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Also called in the worker's main process when the hard time limit killed the child."""
        incident_pk = args[0] if args else kwargs.get("incident_pk")
        try:
            mark_failed(incident_pk, f"The diagnosis stopped: {type(exc).__name__}: {exc}",
                        only_from=Incident.Status.DIAGNOSING)
        except Exception:  # noqa: BLE001 - nothing more to do; the stale claim below recovers it
            logger.exception("could not mark incident %s failed", incident_pk)


def claimable(retrying: bool) -> Q:
    """Queued rows; rows a dead worker left diagnosing past the hard limit; our own retries' rows."""
    stale_before = timezone.now() - timedelta(seconds=settings.TRIAGE_DIAGNOSE_TIME_LIMIT + 2 * HARD_LIMIT_GRACE_S)
    condition = Q(status=Incident.Status.QUEUED) | Q(status=Incident.Status.DIAGNOSING, updated_at__lt=stale_before)
    if retrying:  # the previous try may not have managed to requeue
        condition |= Q(status=Incident.Status.DIAGNOSING)
    return condition


@shared_task(
    bind=True, base=DiagnoseTask, name="jobs.tasks.diagnose_incident", acks_late=True,  # queue: task routes
    soft_time_limit=settings.TRIAGE_DIAGNOSE_TIME_LIMIT,
    time_limit=settings.TRIAGE_DIAGNOSE_TIME_LIMIT + HARD_LIMIT_GRACE_S,
    max_retries=MAX_RETRIES,
)
def diagnose_incident(self, incident_pk: int) -> str:
    claimed = Incident.objects.filter(claimable(bool(self.request.retries)), pk=incident_pk).update(
        status=Incident.Status.DIAGNOSING, status_reason="", updated_at=timezone.now()
    )
    if not claimed:
        return "skipped"
    try:
        diagnosis = run_engine(Incident.objects.get(pk=incident_pk))
        save_diagnosis(incident_pk, diagnosis)
        return "diagnosed"
    except SoftTimeLimitExceeded:
        mark_failed(incident_pk, f"The diagnosis took longer than {settings.TRIAGE_DIAGNOSE_TIME_LIMIT} s.")
        return "failed"
    except TRANSIENT_ERRORS as exc:
        if self.request.retries >= MAX_RETRIES:
            mark_failed(incident_pk, f"Database unavailable after {MAX_RETRIES} retries: {exc}")
            return "failed"
        requeue(incident_pk)
        raise self.retry(exc=exc, countdown=min(2 ** (self.request.retries + 1), 60)) from exc
    except triage.UnusableInput as exc:
        mark_failed(incident_pk, f"The logs could not be read: {exc}")
        return "failed"
    except Exception as exc:  # the engine's bug must not leave the incident diagnosing forever
        logger.exception("diagnosis of incident %s failed", incident_pk)
        mark_failed(incident_pk, f"The engine failed: {type(exc).__name__}: {exc}")
        return "failed"


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
    folder = Path(tempfile.mkdtemp(prefix=f"triage-incident-{incident.pk}-"))
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


def save_diagnosis(incident_pk: int, data: dict) -> None:
    root_cause = data.get("root_cause") or {}
    with transaction.atomic():
        incident = Incident.objects.select_for_update().get(pk=incident_pk)
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
            status=Incident.Status.QUEUED, updated_at=timezone.now()
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
