"""A ReproRun is one sandboxed attempt to reproduce an incident, or to check a fix on the reproduction.

    queued -> running -> reproduced | not_reproduced   (a reproduction of the original failure)
                      -> passed | failed               (a fix's corrected command, run again)
                      -> error | timed_out             (the run itself could not complete)

`reproducible` is False with `reason` when the failure cannot happen on a CPU sandbox (NCCL, GPU
memory at scale, hardware): such rows never claim a pass.
"""
from django.db import models

from jobs.models import Artifact, Incident


class ReproRun(models.Model):
    class Kind(models.TextChoices):
        DATA_CHECK = "data_check", "Data check"
        LAUNCH = "launch", "Launch repro"
        MEMORY = "memory", "Memory repro"
        UNSUPPORTED = "unsupported", "Not reproducible here"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        REPRODUCED = "reproduced", "Reproduced"
        NOT_REPRODUCED = "not_reproduced", "Not reproduced"
        ERROR = "error", "Error"
        TIMED_OUT = "timed_out", "Timed out"

    FINISHED = {Status.PASSED, Status.FAILED, Status.REPRODUCED, Status.NOT_REPRODUCED, Status.ERROR,
                Status.TIMED_OUT}

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="repro_runs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    # The fix this run tried (its kind and position in the diagnosis' fixes); empty for the reproduction.
    fix_kind = models.CharField(max_length=40, blank=True)
    fix_index = models.IntegerField(null=True, blank=True)
    attempt_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="checks")
    reproducible = models.BooleanField(default=True)
    reason = models.TextField(blank=True, help_text="Why not reproducible here, or why the run errored.")
    command = models.TextField(blank=True, help_text="What ran inside the sandbox.")
    limits = models.JSONField(default=dict, blank=True)
    exit_status = models.IntegerField(null=True, blank=True)
    signal = models.IntegerField(null=True, blank=True)
    limit_hit = models.CharField(max_length=20, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    peak_memory_mb = models.FloatField(null=True, blank=True)
    verdict = models.JSONField(default=dict, blank=True, help_text="The engine's reading of the run's log.")
    details = models.JSONField(default=dict, blank=True, help_text="Kind-specific findings (bad rows, peaks).")
    log_tail = models.TextField(blank=True, help_text="The last lines, updated while the run goes.")
    log = models.ForeignKey(Artifact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    output = models.ForeignKey(Artifact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                               help_text="A file the run produced for the user, e.g. the converted data.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.status} ({self.incident_id})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def reproduced(self) -> bool | None:
        """For the reproduction row: did the failure happen again? None while unknown."""
        if self.fix_kind:
            return None
        if self.status == self.Status.REPRODUCED:
            return True
        if self.status == self.Status.NOT_REPRODUCED:
            return False
        return None

    @property
    def verified(self) -> bool | None:
        """For a fix row: True when the corrected run passed, False when it failed, else None."""
        if not self.fix_kind:
            return None
        if self.status == self.Status.PASSED:
            return True
        if self.status == self.Status.FAILED:
            return False
        return None
