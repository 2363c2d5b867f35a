"""Search over the team's incidents and problems.

Incidents are searched through their knowledge-base entry's search_text (job id, title, exception,
message, summary, evidence). Problems through their title, exception, resolution and fix, and
through their incidents. On PostgreSQL: full-text search (english configuration, websearch syntax,
GIN index from migration 0003). Elsewhere (SQLite): every word must occur, case-insensitively.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from knowledge.models import Problem, ProblemOccurrence

SEARCH_CONFIG = "english"  # the same as the index in migration 0003
LIMIT = 50
MAX_WORDS = 12


@dataclass
class Filters:
    q: str = ""
    category: str = ""
    status: str = ""
    cluster: str = ""
    since: date | None = None
    until: date | None = None

    def any(self) -> bool:
        return any([self.q, self.category, self.status, self.cluster, self.since, self.until])


@dataclass
class Results:
    problems: list = field(default_factory=list)
    incidents: list = field(default_factory=list)
    engine: str = ""


def uses_full_text() -> bool:
    return connection.vendor == "postgresql"


def _start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def _end(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.max))


def _words(query: str) -> list[str]:
    return [word for word in query.split() if word.strip("\"'-")][:MAX_WORDS]


def _text_filter(queryset, fields: list[str], query: str, *, vector_name: str):
    """Rows whose fields match the query: full text on PostgreSQL, every word contained elsewhere."""
    if uses_full_text():
        vector = SearchVector(*fields, config=SEARCH_CONFIG)
        return queryset.annotate(**{vector_name: vector}).filter(
            **{vector_name: SearchQuery(query, config=SEARCH_CONFIG, search_type="websearch")})
    for word in _words(query):
        word = word.strip("\"'")
        match = Q()
        for name in fields:
            match |= Q(**{f"{name}__icontains": word})
        queryset = queryset.filter(match)
    return queryset


def incidents(team_ids, filters: Filters, *, limit: int = LIMIT):
    """The team's knowledge-base entries (one per incident) matching the filters, newest first."""
    rows = ProblemOccurrence.objects.filter(team_id__in=team_ids)
    if filters.category:
        rows = rows.filter(category=filters.category)
    if filters.cluster:
        rows = rows.filter(cluster=filters.cluster)
    if filters.status:
        rows = rows.filter(problem__status=filters.status)
    if filters.since:
        rows = rows.filter(seen_at__gte=_start(filters.since))
    if filters.until:
        rows = rows.filter(seen_at__lte=_end(filters.until))
    if filters.q:
        by_text = _text_filter(rows, ["search_text"], filters.q, vector_name="document")
        by_job = rows.filter(job_id=filters.q.strip())
        rows = by_text if not by_job.exists() else rows.filter(Q(pk__in=by_text.values("pk")) | Q(job_id=filters.q.strip()))
    return rows.select_related("incident", "problem").order_by("-seen_at", "-id")[:limit]


def problems(team_ids, filters: Filters, *, limit: int = LIMIT):
    """The team's live problems matching the filters: by their own text or by one of their incidents."""
    rows = Problem.objects.filter(team_id__in=team_ids).live()
    if filters.category:
        rows = rows.filter(category=filters.category)
    if filters.status:
        rows = rows.filter(status=filters.status)
    if filters.cluster:
        rows = rows.filter(occurrence_links__cluster=filters.cluster)
    if filters.since:
        rows = rows.filter(last_seen__gte=_start(filters.since))
    if filters.until:
        rows = rows.filter(first_seen__lte=_end(filters.until))
    if filters.q:
        own = _text_filter(rows, ["title", "exception", "resolution", "fix_summary"], filters.q,
                           vector_name="problem_document")
        through = incidents(team_ids, Filters(q=filters.q), limit=500).values_list("problem_id", flat=True)
        rows = rows.filter(Q(pk__in=own.values("pk")) | Q(pk__in=list(through)))
    return rows.distinct().select_related("resolved_by").order_by("-last_seen", "-id")[:limit]


def search(team_ids, filters: Filters, *, limit: int = LIMIT) -> Results:
    return Results(problems=list(problems(team_ids, filters, limit=limit)),
                   incidents=list(incidents(team_ids, filters, limit=limit)),
                   engine="postgresql full-text" if uses_full_text() else "substring")
