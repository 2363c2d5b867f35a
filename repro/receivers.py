"""Queue the repro runs once a diagnosis is saved (jobs.signals.incident_finished)."""
import logging

from django.conf import settings
from django.dispatch import receiver

from jobs.signals import incident_finished

logger = logging.getLogger(__name__)


@receiver(incident_finished, dispatch_uid="repro.receivers.queue_repro")
def queue_repro(sender, incident, **kwargs) -> None:
    if not getattr(settings, "TRIAGE_REPRO_ENABLED", True) or not hasattr(incident, "diagnosis"):
        return
    from repro.tasks import run_repro

    run_repro.delay(incident.pk)
