"""Incidents, their uploaded artifacts and their diagnosis.

Incident.status is a small state machine, changed only through conditional
updates so that two workers can never both claim one incident:

    queued --claim--> diagnosing --> diagnosed
                                 \\-> failed (status_reason says why)
    failed/diagnosed --rediagnose--> queued
"""
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from jobs.models.teams import Team, TeamScopedQuerySet

SEARCHED_FIELDS = ("job_id", "exception", "summary", "title", "category")


def stale_before():
    """A diagnosing row not touched since this moment belongs to a dead worker (three missed heartbeats)."""
    return timezone.now() - timedelta(seconds=3 * settings.TRIAGE_HEARTBEAT_S)


class IncidentQuerySet(TeamScopedQuerySet):
    def search(self, text: str):
        """Incidents whose job id, exception, summary, title or category contains `text` (any case)."""
        if not text:
            return self
        match = Q()
        for name in SEARCHED_FIELDS:
            match |= Q(**{f"{name}__icontains": text})
        return self.filter(match)

    def stale(self):
        """Diagnosing rows whose worker stopped beating: killed, or lost with its machine."""
        return self.filter(status=Incident.Status.DIAGNOSING, updated_at__lt=stale_before())

    def overdue(self, deadline_s: int):
        """Queued rows untouched for `deadline_s` seconds: a lost wake-up call, or a broker that was down."""
        return self.filter(status=Incident.Status.QUEUED, updated_at__lt=timezone.now() - timedelta(seconds=deadline_s))

    def claimable(self, retrying: bool = False):
        """Rows a worker may take: queued ones, stale ones, and (for a retry, whose previous try
        may not have managed to requeue) any diagnosing one."""
        condition = Q(status=Incident.Status.QUEUED) | Q(status=Incident.Status.DIAGNOSING, updated_at__lt=stale_before())
        if retrying:
            condition |= Q(status=Incident.Status.DIAGNOSING)
        return self.filter(condition)


class Incident(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        DIAGNOSING = "diagnosing", "Diagnosing"
        DIAGNOSED = "diagnosed", "Diagnosed"
        FAILED = "failed", "Failed"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="incidents")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    title = models.CharField(max_length=200, blank=True)
    job_id = models.CharField(max_length=200, blank=True, db_index=True)
    attempt = models.CharField(max_length=50, blank=True)
    scheduler = models.CharField(max_length=50, blank=True)
    cluster = models.CharField(max_length=100, blank=True)
    launcher = models.CharField(max_length=30, blank=True)
    world_size = models.PositiveIntegerField(null=True, blank=True)
    command = models.TextField(blank=True)
    callback_url = models.URLField(max_length=500, blank=True)
    # NULL, not "", so that the partial unique constraint ignores incidents without a key.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    status_reason = models.TextField(blank=True)
    # Denormalised from the diagnosis so that list pages filter and search without joins.
    category = models.CharField(max_length=40, blank=True, db_index=True)
    exception = models.CharField(max_length=200, blank=True)
    failing_rank = models.IntegerField(null=True, blank=True)
    summary = models.TextField(blank=True)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    diagnosed_at = models.DateTimeField(null=True, blank=True)

    objects = IncidentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="unique_idempotency_key_per_team",
            )
        ]
        indexes = [models.Index(fields=["team", "-created_at"], name="incident_team_recent")]

    def __str__(self) -> str:
        return self.title or f"Incident {self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.DIAGNOSED, self.Status.FAILED}


def artifact_path(instance, filename: str) -> str:
    # Stored names are random: the user's file name is kept in original_name only.
    return f"artifacts/{instance.incident.team_id}/{instance.incident_id}/{uuid.uuid4().hex}"


class Artifact(models.Model):
    class Kind(models.TextChoices):
        LOG = "log", "Log"
        CONFIG = "config", "Config"
        COMMAND = "command", "Command"
        DATA_SAMPLE = "data_sample", "Data sample"
        METRICS = "metrics", "Metrics"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.LOG)
    file = models.FileField(upload_to=artifact_path, max_length=300)
    original_name = models.CharField(max_length=255)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "original_name", "id"]

    def __str__(self) -> str:
        return self.original_name


class Diagnosis(models.Model):
    """The engine's verdict: `data` is exactly the diagnosis JSON (docs/diagnosis.md)."""

    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="diagnosis")
    engine_version = models.CharField(max_length=20)
    data = models.JSONField()
    category = models.CharField(max_length=40, db_index=True)
    failing_rank = models.IntegerField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "diagnoses"

    def __str__(self) -> str:
        return f"{self.category} ({self.incident_id})"
