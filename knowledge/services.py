"""Grouping incidents into their team's problems, and recognising a failure seen before."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from knowledge.models import Problem, ProblemOccurrence

RELATED_LIMIT = 3


def problem_title(data: dict) -> str:
    """A short name for the failure: the root exception and its message, else the summary."""
    root_cause = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    exception = str(root_cause.get("exception") or "").strip()
    message = " ".join(str(root_cause.get("message") or "").split())
    if exception:
        title = f"{exception}: {message}" if message else exception
    else:
        summary = " ".join(str(data.get("summary") or "").split())
        title = summary or str(data.get("category") or "unknown")
    return title if len(title) <= 200 else title[:199] + "…"


def _problem_for(team_id, fingerprint: str, data: dict, seen_at) -> Problem:
    """The team's problem with this fingerprint, created if new; a concurrent creator wins the constraint."""
    root_cause = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    defaults = {
        "title": problem_title(data),
        "category": str(data.get("category") or "unknown")[:40],
        "exception": str(root_cause.get("exception") or "")[:200],
        "first_seen": seen_at, "last_seen": seen_at,
    }
    for _attempt in range(3):
        problem = Problem.objects.filter(team_id=team_id, fingerprint=fingerprint).first()
        if problem is not None:
            return problem
        try:
            with transaction.atomic():  # a savepoint: the caller's transaction survives the IntegrityError
                return Problem.objects.create(team_id=team_id, fingerprint=fingerprint, **defaults)
        except IntegrityError:
            continue  # another worker created it between our read and our insert
    return Problem.objects.get(team_id=team_id, fingerprint=fingerprint)


def record(incident, diagnosis) -> Problem | None:
    """Group the incident into its team's problem by the diagnosis fingerprint.

    Idempotent per incident: recording it again changes nothing; a new diagnosis with another
    fingerprint (an engine upgrade, a rediagnosis) moves the incident to that problem.
    """
    fingerprint = str(diagnosis.fingerprint or "").strip()
    if not fingerprint:
        return None
    data = diagnosis.data if isinstance(diagnosis.data, dict) else {}
    seen_at = incident.created_at or timezone.now()
    with transaction.atomic():
        problem = _problem_for(incident.team_id, fingerprint, data, seen_at)
        link = ProblemOccurrence.objects.select_for_update().filter(incident=incident).first()
        if link is not None and link.problem_id == problem.pk:
            return problem
        if link is not None:
            Problem.objects.filter(pk=link.problem_id, occurrences__gt=0).update(occurrences=F("occurrences") - 1)
            link.problem = problem
            link.save(update_fields=["problem"])
        else:
            try:
                with transaction.atomic():
                    ProblemOccurrence.objects.create(problem=problem, incident=incident)
            except IntegrityError:  # a concurrent record() of this incident got there first
                return Problem.objects.filter(occurrence_links__incident=incident).first()
        Problem.objects.filter(pk=problem.pk).update(
            occurrences=F("occurrences") + 1,
            first_seen=Least(F("first_seen"), seen_at),
            last_seen=Greatest(F("last_seen"), seen_at),
        )
    problem.refresh_from_db()
    return problem


def related(team_id, category: str, exception: str, *, exclude=None) -> list[Problem]:
    """Similar but not identical: the team's other problems with the same category and exception."""
    if not category:
        return []
    problems = Problem.objects.filter(team_id=team_id, category=category, exception=exception or "")
    if exclude is not None:
        problems = problems.exclude(pk=exclude)
    return list(problems.order_by("-last_seen", "-id")[:RELATED_LIMIT])


def recognise(incident) -> dict:
    """What the knowledge base knows about this incident's failure (for the incident page)."""
    problem = Problem.objects.filter(occurrence_links__incident=incident).select_related("resolved_by").first()
    similar = related(incident.team_id, incident.category, incident.exception,
                      exclude=problem.pk if problem is not None else None)
    return {
        "problem": problem,
        "known": problem is not None and (problem.occurrences > 1 or bool(problem.resolution.strip())),
        "related": similar,
    }


def update(problem: Problem, *, user, status: str, resolution: str) -> Problem:
    """Set status and resolution; whoever set a resolved state or a resolution is recorded, with the time."""
    problem.status = status
    problem.resolution = resolution.strip()
    if problem.status != Problem.Status.OPEN or problem.resolution:
        problem.resolved_by = user if getattr(user, "is_authenticated", False) else None
        problem.resolved_at = timezone.now()
    else:
        problem.resolved_by, problem.resolved_at = None, None
    problem.save(update_fields=["status", "resolution", "resolved_by", "resolved_at"])
    return problem
