"""Export and import of a team's knowledge base as JSON: problems (with their grouping hashes,
resolutions and fixes) and the team's runbooks, so that a knowledge base moves between
installations. Incidents stay behind: they belong to the installation that diagnosed them.

Import merges into the target team: a problem whose hash the team already knows updates that
problem's resolution only where it has none; others are created with their hashes. Runbooks
replace the team's copy of the same category. Nothing is executed or unpickled: plain JSON,
checked field by field.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from knowledge.models import Problem, ProblemHash, Runbook

FORMAT = "triage-knowledge"
VERSION = 1
MAX_PROBLEMS = 50_000
TEXT_LIMIT = 20_000


class TransferError(ValueError):
    """The document is not a knowledge-base export (the message says what is wrong)."""


def export_team(team) -> dict:
    problems = []
    for problem in Problem.objects.filter(team=team).live().select_related("resolved_by").prefetch_related("hashes"):
        problems.append({
            "title": problem.title, "title_edited": problem.title_edited, "category": problem.category,
            "exception": problem.exception, "status": problem.status, "resolution": problem.resolution,
            "fix_kind": problem.fix_kind, "fix_summary": problem.fix_summary,
            "resolved_by": problem.resolved_by.username if problem.resolved_by else None,
            "resolved_at": problem.resolved_at.isoformat() if problem.resolved_at else None,
            "first_seen": problem.first_seen.isoformat(), "last_seen": problem.last_seen.isoformat(),
            "occurrences": problem.occurrences,
            "hashes": [{"kind": row.kind, "value": row.value} for row in problem.hashes.all()],
        })
    runbooks = [{"category": row.category, "body": row.body} for row in Runbook.objects.filter(team=team)]
    return {"format": FORMAT, "version": VERSION, "team": team.name, "exported_at": timezone.now().isoformat(),
            "problems": problems, "runbooks": runbooks}


def _text(item: dict, name: str, limit: int = TEXT_LIMIT) -> str:
    value = item.get(name) or ""
    if not isinstance(value, str):
        raise TransferError(f"'{name}' must be a string")
    return value[:limit]


def _when(item: dict, name: str):
    value = item.get(name)
    if value in (None, ""):
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise TransferError(f"'{name}' must be an ISO date-time")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def _check(document) -> None:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TransferError(f"not a knowledge-base export (expected format '{FORMAT}')")
    if document.get("version") != VERSION:
        raise TransferError(f"unsupported version {document.get('version')!r} (this installation reads {VERSION})")
    if not isinstance(document.get("problems", []), list) or not isinstance(document.get("runbooks", []), list):
        raise TransferError("'problems' and 'runbooks' must be lists")
    if len(document.get("problems", [])) > MAX_PROBLEMS:
        raise TransferError(f"at most {MAX_PROBLEMS} problems per import")


def import_team(team, document, *, user=None) -> dict:
    """Merge the export into the team; returns counts. All or nothing: a bad item changes nothing."""
    _check(document)
    counts = {"problems_created": 0, "problems_updated": 0, "runbooks": 0}
    statuses = set(Problem.Status.values)
    with transaction.atomic():
        for item in document.get("problems", []):
            if not isinstance(item, dict):
                raise TransferError("each problem must be an object")
            hashes = [(str(row.get("kind")), str(row.get("value"))[:64]) for row in item.get("hashes") or []
                      if isinstance(row, dict) and row.get("kind") in ProblemHash.Kind.values and row.get("value")]
            status = item.get("status") or Problem.Status.OPEN
            if status not in statuses:
                raise TransferError(f"unknown status {status!r}")
            existing = (ProblemHash.objects.filter(team=team, kind=kind, value=value).select_related("problem").first()
                        for kind, value in hashes)
            found = next((row.problem for row in existing if row is not None), None)
            if found is not None:
                if not found.resolution.strip() and _text(item, "resolution").strip():
                    found.resolution = _text(item, "resolution")
                    found.fix_kind = _text(item, "fix_kind", 40)
                    found.fix_summary = _text(item, "fix_summary")
                    found.status, found.resolved_at = status, _when(item, "resolved_at") or timezone.now()
                    found.save(update_fields=["resolution", "fix_kind", "fix_summary", "status", "resolved_at"])
                    counts["problems_updated"] += 1
                problem = found
            else:
                now = timezone.now()
                problem = Problem.objects.create(
                    team=team, fingerprint=hashes[0][1] if hashes else "", title=_text(item, "title", 200) or "imported",
                    title_edited=bool(item.get("title_edited")), category=_text(item, "category", 40) or "unknown",
                    exception=_text(item, "exception", 200), status=status, resolution=_text(item, "resolution"),
                    fix_kind=_text(item, "fix_kind", 40), fix_summary=_text(item, "fix_summary"),
                    resolved_at=_when(item, "resolved_at"), first_seen=_when(item, "first_seen") or now,
                    last_seen=_when(item, "last_seen") or now,
                )
                counts["problems_created"] += 1
            ProblemHash.objects.bulk_create(
                [ProblemHash(team=team, problem=problem, kind=kind, value=value) for kind, value in hashes],
                ignore_conflicts=True)
        for item in document.get("runbooks", []):
            if not isinstance(item, dict) or not _text(item, "category", 40) or not _text(item, "body").strip():
                raise TransferError("each runbook needs a category and a body")
            Runbook.objects.update_or_create(team=team, category=_text(item, "category", 40),
                                             defaults={"body": _text(item, "body"), "updated_by": user})
            counts["runbooks"] += 1
    return counts
