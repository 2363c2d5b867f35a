"""The team knowledge base: every diagnosed incident is an occurrence of one Problem.

A Problem is a failure the team has seen, keyed by the engine's fingerprint (stable across
runs of the same failure), unique per team. Problem.status is set by people:

    open --> resolved (resolution says what fixed it)
         \\-> wont_fix
    resolved/wont_fix --> open (any team member may reopen)
"""
from django.conf import settings
from django.db import models

from jobs.models import Incident, Team
from jobs.models.teams import TeamScopedQuerySet


class ProblemQuerySet(TeamScopedQuerySet):
    pass


class Problem(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"
        WONT_FIX = "wont_fix", "Won't fix"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="problems")
    fingerprint = models.CharField(max_length=64)
    title = models.CharField(max_length=200)
    category = models.CharField(max_length=40, db_index=True)
    exception = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    resolution = models.TextField(blank=True, help_text="Plain text: what fixed it, or why it is left alone.")
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    # Kept in step with the occurrence rows by F() updates in knowledge.services.record.
    occurrences = models.PositiveIntegerField(default=0)
    incidents = models.ManyToManyField(Incident, through="ProblemOccurrence", related_name="problems")

    objects = ProblemQuerySet.as_manager()

    class Meta:
        ordering = ["-last_seen", "-id"]
        constraints = [models.UniqueConstraint(fields=["team", "fingerprint"], name="unique_problem_per_team")]
        indexes = [
            models.Index(fields=["team", "-last_seen"], name="problem_team_recent"),
            models.Index(fields=["team", "category", "exception"], name="problem_team_kind"),
        ]

    def __str__(self) -> str:
        return self.title or f"Problem {self.pk}"

    @property
    def seen_before(self) -> int:
        """Occurrences other than the one being looked at."""
        return max(self.occurrences - 1, 0)


class ProblemOccurrence(models.Model):
    """One incident's membership of a problem: at most one problem per incident."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="occurrence_links")
    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="problem_occurrence")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"incident {self.incident_id} in problem {self.problem_id}"
