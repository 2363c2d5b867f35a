"""Closest past incidents by the similarity of their evidence (rapidfuzz over masked lines).

Used when an incident matches no problem exactly. The candidates are the team's most recent
incidents of the same category (read through an index), each distinct evidence text scored once.
"""
from __future__ import annotations

from rapidfuzz import fuzz, process

from knowledge.models import Problem, ProblemOccurrence

CANDIDATES = 3000
LIMIT = 5
MIN_SCORE = 55.0


def similar_incidents(team_id, evidence: str, *, category: str = "", exclude_incident=None,
                      exclude_problem=None, limit: int = LIMIT, min_score: float = MIN_SCORE) -> list[dict]:
    """[{incident_id, problem_id, problem_title, problem_status, job_id, seen_at, score}], best first."""
    if not evidence.strip():
        return []
    rows = ProblemOccurrence.objects.filter(team_id=team_id)
    if category and category != "unknown":
        rows = rows.filter(category=category)
    if exclude_incident is not None:
        rows = rows.exclude(incident_id=exclude_incident)
    if exclude_problem is not None:
        rows = rows.exclude(problem_id=exclude_problem)
    pool = rows.order_by("-seen_at", "-id").values_list(
        "incident_id", "problem_id", "evidence", "job_id", "seen_at")[:CANDIDATES]
    first_of: dict[str, tuple] = {}
    for row in pool:
        if row[2] and row[2] not in first_of:
            first_of[row[2]] = row
    if not first_of:
        return []
    texts = list(first_of)
    found = process.extract(evidence, texts, scorer=fuzz.token_set_ratio, limit=limit * 3, score_cutoff=min_score)
    picked, problems_seen = [], set()
    for text, score, _index in found:
        incident_id, problem_id, _, job_id, seen_at = first_of[text]
        if problem_id in problems_seen:
            continue  # one line per past problem: its most recent similar incident
        problems_seen.add(problem_id)
        picked.append({"incident_id": incident_id, "problem_id": problem_id, "job_id": job_id,
                       "seen_at": seen_at, "score": round(float(score), 1)})
        if len(picked) >= limit:
            break
    titles = dict(Problem.objects.filter(pk__in=[item["problem_id"] for item in picked])
                  .values_list("pk", "title"))
    statuses = dict(Problem.objects.filter(pk__in=titles).values_list("pk", "status"))
    for item in picked:
        item["problem_title"] = titles.get(item["problem_id"], "")
        item["problem_status"] = statuses.get(item["problem_id"], "")
    return picked
