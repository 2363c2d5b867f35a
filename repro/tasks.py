"""The repro task (queue `repro`): reproduce the incident in the sandbox, then check its top fix.

Nothing here can break the incident: every failure ends in a ReproRun row marked error or timed_out.
"""
import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

logger = logging.getLogger(__name__)


@shared_task(name="repro.tasks.run_repro", acks_late=True, ignore_result=True,
             soft_time_limit=settings.TRIAGE_REPRO_TIME_LIMIT, time_limit=settings.TRIAGE_REPRO_TIME_LIMIT + 30)
def run_repro(incident_pk: int) -> str:
    from repro import runner

    try:
        return runner.reproduce(incident_pk)
    except SoftTimeLimitExceeded:
        runner.abandon(incident_pk, f"The repro task ran past {settings.TRIAGE_REPRO_TIME_LIMIT} s.", timed_out=True)
        return "timed_out"
    except Exception as exc:  # noqa: BLE001 - recorded on the runs; the incident stays as it is
        logger.exception("repro of incident %s failed", incident_pk)
        runner.abandon(incident_pk, f"The repro stopped: {type(exc).__name__}: {exc}")
        return "error"
