"""Search over the team's incidents and problems.

Incidents are searched through their knowledge-base entry's search_text (job id, title, exception,
message, summary, evidence). Problems through their title, exception, resolution and fix, and
through their incidents. On PostgreSQL: full-text search (english configuration, websearch syntax)
over knowledge_search_index, a narrow table kept in step by triggers, with its GIN index (migration
0003). Elsewhere (SQLite): every word must occur, case-insensitively.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from knowledge.models import Problem, ProblemOccurrence

SEARCH_CONFIG = "english"  # the same as the generated column in migration 0003
LIMIT = 50
VIA_LIMIT = 500  # problems found through their incidents: among the most recent matching incidents
PROBLEM_FIELDS = ["title", "exception", "resolution", "fix_summary"]
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


def _incident_ids_matching(team_ids, filters: Filters, problem_ids, limit) -> list[int]:
    """PostgreSQL: occurrence ids matching the text and filters, newest first, from the narrow index."""
    where = ["team_id = ANY(%s)", f"document @@ websearch_to_tsquery('{SEARCH_CONFIG}'::regconfig, %s)"]
    params: list = [list(team_ids), filters.q]
    for column, value in (("category", filters.category), ("cluster", filters.cluster)):
        if value:
            where.append(f"{column} = %s")
            params.append(value)
    if filters.since:
        where.append("seen_at >= %s")
        params.append(_start(filters.since))
    if filters.until:
        where.append("seen_at <= %s")
        params.append(_end(filters.until))
    if problem_ids is not None:
        where.append("problem_id = ANY(%s)")
        params.append(list(problem_ids))
    sql = (f"SELECT occurrence_id FROM knowledge_search_index WHERE {' AND '.join(where)} "
           f"ORDER BY seen_at DESC, occurrence_id DESC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit or VIA_LIMIT])
        return [row[0] for row in cursor.fetchall()]


def text_filter(queryset, fields: list[str], query: str, *, vector_name: str):
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


def _problem_ids_with_status(team_ids, status: str) -> list[int]:
    return list(Problem.objects.filter(team_id__in=team_ids, status=status).values_list("pk", flat=True))


def incidents(team_ids, filters: Filters, *, limit: int | None = LIMIT):
    """The team's knowledge-base entries (one per incident) matching the filters, newest first."""
    rows = ProblemOccurrence.objects.filter(team_id__in=team_ids)
    # Problems are few: their ids as a list keep the plan on the occurrence tables' own indexes.
    problem_ids = _problem_ids_with_status(team_ids, filters.status) if filters.status else None
    if filters.q:
        by_job = rows.filter(job_id=filters.q.strip())
        if by_job.exists():  # a job id typed in full finds that job's incidents
            rows = by_job
        elif uses_full_text():
            ids = _incident_ids_matching(team_ids, filters, problem_ids, limit)
            return rows.filter(pk__in=ids).select_related("incident", "problem").order_by("-seen_at", "-id")
        else:
            rows = text_filter(rows, ["search_text"], filters.q, vector_name="document")
    if filters.category:
        rows = rows.filter(category=filters.category)
    if filters.cluster:
        rows = rows.filter(cluster=filters.cluster)
    if problem_ids is not None:
        rows = rows.filter(problem_id__in=problem_ids)
    if filters.since:
        rows = rows.filter(seen_at__gte=_start(filters.since))
    if filters.until:
        rows = rows.filter(seen_at__lte=_end(filters.until))
    return rows.select_related("incident", "problem").order_by("-seen_at", "-id")[:limit]


def problems(team_ids, filters: Filters, *, limit: int | None = LIMIT, via: list[int] | None = None):
    """The team's live problems matching the filters (Problem.objects.search), at most `limit`."""
    return Problem.objects.search(team_ids, filters, via=via)[:limit]


def search(team_ids, filters: Filters, *, limit: int = LIMIT) -> Results:
    """Matching incidents (newest first) and problems: by their own text or through those incidents."""
    found = list(incidents(team_ids, filters, limit=limit))
    via = [row.problem_id for row in found]
    return Results(problems=list(problems(team_ids, filters, limit=limit, via=via)), incidents=found,
                   engine="postgresql full-text" if uses_full_text() else "substring")
