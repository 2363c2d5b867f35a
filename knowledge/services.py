"""Grouping incidents into their team's problems, recognising a failure seen before, and the
hand-made changes to grouping (merge, split, undo) and to problems (resolve, rename)."""
from __future__ import annotations

import hashlib

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Min
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from knowledge.grouping import Signature, choose, masked_message, signature, title_from
from knowledge.models import EvidenceSample, GroupingAction, Problem, ProblemHash, ProblemOccurrence, Runbook
from knowledge.runbooks import default_runbook
from knowledge.similar import similar_incidents
from knowledge.textindex import search_text


class GroupingError(ValueError):
    """A merge, split or undo that cannot be done (the message says why)."""


def _lookup(team_id):
    def find(kind, value):
        return ProblemHash.objects.filter(team_id=team_id, kind=kind, value=value).values_list(
            "problem_id", flat=True).first()
    return find


def _problem_for(team_id, sig: Signature, seen_at) -> Problem:
    """The team's problem holding any of the hashes (fine first), created with them if none does."""
    for _attempt in range(3):
        found = choose(sig, _lookup(team_id))
        if found is not None:
            return Problem.objects.get(pk=found)
        try:
            with transaction.atomic():  # a savepoint: a concurrent creator wins the unique constraint
                problem = Problem.objects.create(
                    team_id=team_id, fingerprint=sig.fine, title=sig.title, category=sig.category,
                    exception=sig.exception, first_seen=seen_at, last_seen=seen_at,
                )
                ProblemHash.objects.bulk_create(
                    [ProblemHash(team_id=team_id, problem=problem, kind=kind, value=value) for kind, value in sig.hashes]
                )
                return problem
        except IntegrityError:
            continue
    raise RuntimeError("could not find or create the problem after three tries")


def _occurrence_fields(incident, data: dict, sig: Signature, seen_at) -> dict:
    root = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    return {
        "team_id": incident.team_id, "seen_at": seen_at, "category": sig.category, "exception": sig.exception,
        "cluster": incident.cluster or "", "job_id": incident.job_id or "",
        "failing_rank": data.get("failing_rank") if isinstance(data.get("failing_rank"), int) else None,
        "fine_hash": sig.fine, "coarse_hash": sig.coarse,
        "message": str(root.get("message") or data.get("summary") or "")[:2000],
        "evidence": "\n".join(sig.evidence), "search_text": search_text(incident, data),
    }


def evidence_digest(evidence: str) -> str:
    return hashlib.sha1(evidence.encode(), usedforsecurity=False).hexdigest()


def _remember_evidence(incident, fields: dict) -> None:
    """The team's sample of this evidence text now points at this, its latest incident."""
    if not fields["evidence"]:
        return
    EvidenceSample.objects.update_or_create(
        team_id=incident.team_id, digest=evidence_digest(fields["evidence"]),
        defaults={"category": fields["category"], "evidence": fields["evidence"], "incident": incident,
                  "seen_at": fields["seen_at"]},
    )


def record(incident, diagnosis) -> Problem | None:
    """Group the incident into its team's problem; a resolved problem it joins becomes regressed.

    Idempotent per incident: recording it again changes nothing; a new diagnosis with other hashes
    (an engine upgrade, a rediagnosis) moves the incident to the problem those hashes lead to.
    """
    data = diagnosis.data if isinstance(diagnosis.data, dict) else {}
    if not data:
        return None
    sig = signature(data)
    seen_at = incident.created_at or timezone.now()
    with transaction.atomic():
        link = ProblemOccurrence.objects.select_for_update().filter(incident=incident).first()
        if link is not None and (link.fine_hash, link.coarse_hash) == (sig.fine, sig.coarse):
            return link.problem
        problem = _problem_for(incident.team_id, sig, seen_at)
        fields = _occurrence_fields(incident, data, sig, seen_at)
        _remember_evidence(incident, fields)
        if link is None:
            try:
                with transaction.atomic():
                    ProblemOccurrence.objects.create(problem=problem, incident=incident, **fields)
            except IntegrityError:  # a concurrent record() of this incident got there first
                return Problem.objects.filter(occurrence_links__incident=incident).first()
        else:
            old_problem = link.problem_id
            ProblemOccurrence.objects.filter(pk=link.pk).update(problem=problem, **fields)
            if old_problem == problem.pk:
                return problem
            Problem.objects.filter(pk=old_problem, occurrences__gt=0).update(occurrences=F("occurrences") - 1)
        # Hashes no other problem holds now lead here too (any hash joins).
        ProblemHash.objects.bulk_create(
            [ProblemHash(team_id=incident.team_id, problem=problem, kind=kind, value=value)
             for kind, value in sig.hashes], ignore_conflicts=True,
        )
        Problem.objects.filter(pk=problem.pk).update(
            occurrences=F("occurrences") + 1,
            first_seen=Least(F("first_seen"), seen_at),
            last_seen=Greatest(F("last_seen"), seen_at),
        )
        Problem.objects.filter(pk=problem.pk, status=Problem.Status.RESOLVED, resolved_at__lt=seen_at).update(
            status=Problem.Status.REGRESSED, regressed_at=seen_at, regressions=F("regressions") + 1,
        )
    problem.refresh_from_db()
    return problem


def runbook_for(team_id, category: str) -> dict:
    """{category, title, body, edited, updated_by, updated_at}: the team's copy, else the shipped one."""
    title, body = default_runbook(category)
    row = Runbook.objects.filter(team_id=team_id, category=category).select_related("updated_by").first()
    return {"category": category, "title": title, "body": row.body if row else body, "edited": row is not None,
            "updated_by": row.updated_by if row else None, "updated_at": row.updated_at if row else None}


def recognise(incident) -> dict:
    """What the knowledge base knows about this incident's failure (for the incident page and the API).

    problem: its problem; known: the team saw it before or wrote down a fix; similar: when the
    problem is new, the closest past incidents of other problems by their evidence, with a score.
    """
    link = (ProblemOccurrence.objects.filter(incident=incident)
            .select_related("problem", "problem__resolved_by").first())
    problem = link.problem if link is not None else None
    known = problem is not None and (problem.occurrences > 1 or bool(problem.resolution.strip()))
    similar, previous = [], None
    if known:
        previous = (problem.occurrence_links.exclude(incident=incident).order_by("-seen_at")
                    .values_list("seen_at", flat=True).first())
    if link is not None and not known:
        similar = similar_incidents(incident.team_id, link.evidence, category=link.category,
                                    exclude_incident=incident.pk, exclude_problem=problem.pk)
    return {"problem": problem, "known": known, "similar": similar, "previous": previous,
            "runbook": runbook_for(incident.team_id, incident.category or (problem.category if problem else ""))}


def update(problem: Problem, *, user, status: str, resolution: str, fix_kind: str | None = None,
           fix_summary: str | None = None) -> Problem:
    """Set status, resolution and the fix that worked; whoever resolved it is recorded, with the time."""
    problem.status = status
    problem.resolution = resolution.strip()
    if fix_kind is not None:
        problem.fix_kind = fix_kind.strip()[:40]
    if fix_summary is not None:
        problem.fix_summary = fix_summary.strip()
    if problem.status != Problem.Status.OPEN or problem.resolution:
        problem.resolved_by = user if getattr(user, "is_authenticated", False) else None
        problem.resolved_at = timezone.now()
    else:
        problem.resolved_by, problem.resolved_at = None, None
    problem.save(update_fields=["status", "resolution", "fix_kind", "fix_summary", "resolved_by", "resolved_at"])
    return problem


def _auto_title(problem: Problem) -> str:
    link = problem.occurrence_links.order_by("seen_at", "id").first()
    if link is None:
        return problem.title
    return title_from(link.category, link.exception, masked_message(link.message))


def rename(problem: Problem, title: str) -> Problem:
    """A person's title sticks; an empty one goes back to the title made from masked parts."""
    title = " ".join(title.split())[:200]
    problem.title, problem.title_edited = (title, True) if title else (_auto_title(problem), False)
    problem.save(update_fields=["title", "title_edited"])
    return problem


def refresh_counts(problem: Problem) -> None:
    totals = problem.occurrence_links.aggregate(count=Count("id"), first=Min("seen_at"), last=Max("seen_at"))
    values = {"occurrences": totals["count"]}
    if totals["first"] is not None:
        values.update(first_seen=totals["first"], last_seen=totals["last"])
    Problem.objects.filter(pk=problem.pk).update(**values)
    problem.refresh_from_db()


def merge(target: Problem, sources, *, user=None) -> list[GroupingAction]:
    """Move every incident and hash of each source into target; each source is kept, marked merged."""
    actions = []
    with transaction.atomic():
        for source in sources:
            if source.pk == target.pk or source.team_id != target.team_id or source.merged_into_id:
                raise GroupingError(f"problem {source.pk} cannot be merged into problem {target.pk}")
            incident_ids = list(source.occurrence_links.values_list("incident_id", flat=True))
            hash_ids = list(source.hashes.values_list("id", flat=True))
            ProblemOccurrence.objects.filter(problem=source).update(problem=target)
            ProblemHash.objects.filter(pk__in=hash_ids).update(problem=target)
            source.merged_into = target
            source.save(update_fields=["merged_into"])
            refresh_counts(source)
            actions.append(GroupingAction.objects.create(
                team_id=target.team_id, kind=GroupingAction.Kind.MERGE, source=source, target=target,
                incident_ids=incident_ids, hash_ids=hash_ids, actor=user if _is_user(user) else None))
        refresh_counts(target)
    return actions


def split(problem: Problem, incident_ids, *, user=None, title: str = "") -> tuple[Problem, GroupingAction]:
    """Move the chosen incidents (and the hashes only they carry) into a new problem."""
    wanted = {int(pk) for pk in incident_ids}
    with transaction.atomic():
        moving = list(problem.occurrence_links.filter(incident_id__in=wanted).order_by("seen_at", "id"))
        if not moving:
            raise GroupingError("choose incidents of this problem to split off")
        if len(moving) >= problem.occurrence_links.count():
            raise GroupingError("leave at least one incident in the problem")
        staying = set()
        for fine, coarse in problem.occurrence_links.exclude(incident_id__in=wanted).values_list(
                "fine_hash", "coarse_hash"):
            staying.update((fine, coarse))
        carried = {value for link in moving for value in (link.fine_hash, link.coarse_hash)} - staying
        first = moving[0]
        new = Problem.objects.create(
            team_id=problem.team_id, fingerprint=first.fine_hash, category=first.category,
            exception=first.exception, first_seen=first.seen_at or timezone.now(),
            last_seen=moving[-1].seen_at or timezone.now(),
            title=" ".join(title.split())[:200] or title_from(first.category, first.exception,
                                                              masked_message(first.message)),
            title_edited=bool(title.strip()),
        )
        hash_ids = list(problem.hashes.filter(value__in=carried).values_list("id", flat=True))
        ProblemHash.objects.filter(pk__in=hash_ids).update(problem=new)
        moved_ids = [link.incident_id for link in moving]
        ProblemOccurrence.objects.filter(problem=problem, incident_id__in=moved_ids).update(problem=new)
        refresh_counts(problem)
        refresh_counts(new)
        action = GroupingAction.objects.create(
            team_id=problem.team_id, kind=GroupingAction.Kind.SPLIT, source=problem, target=new,
            incident_ids=moved_ids, hash_ids=hash_ids, actor=user if _is_user(user) else None)
    return new, action


def undo(action: GroupingAction, *, user=None) -> GroupingAction:
    """Put back what the action moved (what is still where it left it); the action is marked undone."""
    with transaction.atomic():
        action = GroupingAction.objects.select_for_update().get(pk=action.pk)
        if action.undone_at is not None:
            raise GroupingError("this change was already undone")
        source, target = action.source, action.target
        ProblemOccurrence.objects.filter(problem=target, incident_id__in=action.incident_ids).update(problem=source)
        ProblemHash.objects.filter(problem=target, pk__in=action.hash_ids).update(problem=source)
        if action.kind == GroupingAction.Kind.MERGE:
            source.merged_into = None
            source.save(update_fields=["merged_into"])
        else:  # the problem made by the split is retired into the one it came from
            target.merged_into = source
            target.save(update_fields=["merged_into"])
            ProblemHash.objects.filter(problem=target).update(problem=source)
        refresh_counts(source)
        refresh_counts(target)
        action.undone_at = timezone.now()
        action.undone_by = user if _is_user(user) else None
        action.save(update_fields=["undone_at", "undone_by"])
    return action


def _is_user(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))
