"""Closest past incidents by the similarity of their evidence (rapidfuzz over masked lines).

Used when an incident matches no problem exactly. Candidates are the team's distinct evidence texts
(knowledge.models.EvidenceSample, one per text, with its latest incident) of the same category, the
most recent first: the cost follows how many different failures the team has seen, not how many
incidents it stored.
"""
from __future__ import annotations

from rapidfuzz import fuzz, process

from knowledge.models import EvidenceSample, Problem, ProblemOccurrence

CANDIDATES = 3000
LIMIT = 5
MIN_SCORE = 55.0


def similar_incidents(team_id, evidence: str, *, category: str = "", exclude_incident=None,
                      exclude_problem=None, limit: int = LIMIT, min_score: float = MIN_SCORE) -> list[dict]:
    """[{incident_id, problem_id, problem_title, problem_status, job_id, seen_at, score}], best first."""
    if not evidence.strip():
        return []
    samples = EvidenceSample.objects.filter(team_id=team_id)
    if category and category != "unknown":
        samples = samples.filter(category=category)
    if exclude_incident is not None:
        samples = samples.exclude(incident_id=exclude_incident)
    pool = list(samples.order_by("-seen_at", "-id").values_list("incident_id", "evidence")[:CANDIDATES])
    if not pool:
        return []
    found = process.extract(evidence, [text for _, text in pool], scorer=fuzz.token_set_ratio,
                            limit=limit * 4, score_cutoff=min_score)
    picked_ids = [pool[index][0] for _text, _score, index in found]
    entries = {row["incident_id"]: row for row in ProblemOccurrence.objects.filter(incident_id__in=picked_ids).values(
        "incident_id", "problem_id", "job_id", "seen_at")}
    picked, problems_seen = [], set()
    for _text, score, index in found:
        entry = entries.get(pool[index][0])
        if entry is None or entry["problem_id"] == exclude_problem or entry["problem_id"] in problems_seen:
            continue  # one line per past problem: its most recent similar incident
        problems_seen.add(entry["problem_id"])
        picked.append(dict(entry, score=round(float(score), 1)))
        if len(picked) >= limit:
            break
    rows = {row[0]: row[1:] for row in Problem.objects.filter(pk__in=problems_seen).values_list("pk", "title", "status")}
    for item in picked:
        item["problem_title"], item["problem_status"] = rows.get(item["problem_id"], ("", ""))
    return picked
