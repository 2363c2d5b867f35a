"""The team knowledge base: every diagnosed incident is an occurrence of one Problem.

An incident joins the team's problem that holds ANY of its grouping hashes (knowledge.grouping:
a fine and a coarse one); a new problem is made when none does. Problem.status:

    open --> resolved (resolution says what fixed it)  --an incident after resolved_at--> regressed
         \\-> wont_fix                                                 regressed --> resolved
    resolved/wont_fix/regressed --> open (reopened by a member)

Merges and splits move occurrences and hashes between problems; each is a GroupingAction that
remembers exactly what it moved, so that it can be undone.
"""
from django.conf import settings
from django.db import models

from jobs.models import Incident, Team
from jobs.models.teams import TeamScopedQuerySet


class ProblemQuerySet(TeamScopedQuerySet):
    def live(self):
        """Problems that have not been merged into another one."""
        return self.filter(merged_into__isnull=True)

    def search(self, team_ids, filters, *, via=None):
        """The teams' live problems matching `filters` (a knowledge.search.Filters), last seen first.

        A problem matches by its own text (title, exception, resolution, fix) or through its
        incidents; filters that only incidents carry (cluster, dates) match through incidents alone.
        `via`: problem ids of the incidents a search already found (else they are looked up). No
        filters: every live problem of the teams.
        """
        from knowledge import search

        rows = self.filter(team_id__in=team_ids).live()
        if filters.category:
            rows = rows.filter(category=filters.category)
        if filters.status:
            rows = rows.filter(status=filters.status)
        incident_level = bool(filters.cluster or filters.since or filters.until)
        if filters.q or incident_level:
            if via is None:
                via = list(search.incidents(team_ids, filters, limit=search.VIA_LIMIT)
                           .values_list("problem_id", flat=True))
            match = models.Q(pk__in=set(via))
            if filters.q and not incident_level:
                own = search.text_filter(Problem.objects.filter(team_id__in=team_ids), search.PROBLEM_FIELDS,
                                         filters.q, vector_name="problem_document")
                match |= models.Q(pk__in=own.values("pk"))
            rows = rows.filter(match)
        return rows.select_related("resolved_by").order_by("-last_seen", "-id")


class Problem(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"
        REGRESSED = "regressed", "Regressed"
        WONT_FIX = "wont_fix", "Won't fix"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="problems")
    # The fine hash of the incident that opened the problem (shown; grouping uses ProblemHash).
    fingerprint = models.CharField(max_length=64)
    title = models.CharField(max_length=200)
    title_edited = models.BooleanField(default=False, help_text="A person named it: grouping keeps the title.")
    category = models.CharField(max_length=40, db_index=True)
    exception = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    resolution = models.TextField(blank=True, help_text="Markdown: what fixed it, or why it is left alone.")
    fix_kind = models.CharField(max_length=40, blank=True, help_text="Kind of the fix that worked, or 'manual'.")
    fix_summary = models.TextField(blank=True, help_text="The fix that worked: a suggested fix or your own words.")
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    regressed_at = models.DateTimeField(null=True, blank=True)
    regressions = models.PositiveIntegerField(default=0)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="merged_problems")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    # Kept in step with the occurrence rows by F() updates in knowledge.services.
    occurrences = models.PositiveIntegerField(default=0)
    incidents = models.ManyToManyField(Incident, through="ProblemOccurrence", related_name="problems")

    objects = ProblemQuerySet.as_manager()

    class Meta:
        ordering = ["-last_seen", "-id"]
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


class ProblemHash(models.Model):
    """A grouping hash a problem answers to: an incident with this hash joins it."""

    class Kind(models.TextChoices):
        FINE = "fine", "Fine"
        COARSE = "coarse", "Coarse"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="hashes")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    value = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "kind", "value"], name="unique_hash_per_team")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.value[:12]} -> {self.problem_id}"


class ProblemOccurrence(models.Model):
    """One incident's entry in the knowledge base: its problem, its hashes and its searchable text."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="occurrence_links")
    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="problem_occurrence")
    created_at = models.DateTimeField(auto_now_add=True)
    # Denormalised from the incident so that search and similarity read one table.
    team = models.ForeignKey(Team, null=True, on_delete=models.CASCADE, related_name="+")
    seen_at = models.DateTimeField(null=True, db_index=True)
    category = models.CharField(max_length=40, blank=True)
    exception = models.CharField(max_length=200, blank=True)
    cluster = models.CharField(max_length=100, blank=True)
    job_id = models.CharField(max_length=200, blank=True)
    failing_rank = models.IntegerField(null=True, blank=True)
    fine_hash = models.CharField(max_length=64, blank=True)
    coarse_hash = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    evidence = models.TextField(blank=True, help_text="Masked, lower-cased evidence lines, one a line.")
    search_text = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-seen_at"], name="occurrence_team_recent"),
            models.Index(fields=["team", "category", "-seen_at"], name="occurrence_team_category"),
            models.Index(fields=["team", "job_id"], name="occurrence_team_job"),
        ]
        # PostgreSQL also gets a GIN index on to_tsvector('english', search_text) (migration 0002).

    def __str__(self) -> str:
        return f"incident {self.incident_id} in problem {self.problem_id}"


class GroupingAction(models.Model):
    """A merge or split done by hand: what moved where, so that it can be undone."""

    class Kind(models.TextChoices):
        MERGE = "merge", "Merge"
        SPLIT = "split", "Split"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # merge: source was merged into target; split: incidents moved from source to the new target.
    source = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="+")
    incident_ids = models.JSONField(default=list)
    hash_ids = models.JSONField(default=list)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_id} -> {self.target_id}"


class Runbook(models.Model):
    """A team's own version of the runbook for one category (the shipped text is the default)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runbooks")
    category = models.CharField(max_length=40)
    body = models.TextField(help_text="Markdown.")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["category"]
        constraints = [models.UniqueConstraint(fields=["team", "category"], name="unique_runbook_per_team")]

    def __str__(self) -> str:
        return f"{self.category} runbook ({self.team})"


class EvidenceSample(models.Model):
    """One distinct (masked) evidence text of a team, with its most recent incident.

    Similar-incident lookups compare against these, so their cost follows how many different
    failures a team has seen, not how many incidents it stored.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=40, blank=True)
    digest = models.CharField(max_length=40)
    evidence = models.TextField()
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="+")
    seen_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "digest"], name="unique_evidence_per_team")]
        indexes = [models.Index(fields=["team", "category", "-seen_at"], name="evidence_team_category")]

    def __str__(self) -> str:
        return f"{self.category} evidence {self.digest[:10]}"
