"""One factory per model, for every test folder (the fixtures in tests/conftest.py build on these).

Plain functions with sensible defaults; every keyword a test passes goes to the model. Imports of
Django models happen inside the functions, so engine-only runs (`-p no:django`) can import this
module's neighbours without Django being set up.

    team = make_team("Alpha")                       # Team (slug from the name)
    alice = make_user("alice", team, role="admin")  # User + Membership
    key, raw = make_api_key(team)                   # ApiKey and the raw key shown once
    incident = make_incident(team, diagnosis=diagnosis_data())   # Incident (+ Diagnosis)
    make_artifact(incident, "rank1.log", "...")     # Artifact with its file in storage
    make_webhook_endpoint(team); make_webhook_delivery(incident)
    problem = make_problem(team); make_problem_occurrence(problem, incident)
"""

from __future__ import annotations

import itertools

from django.core.files.base import ContentFile

PASSWORD = "correct-horse-battery"  # every story user's password (the browser tests log in with it)
_serial = itertools.count(1)


def _next(prefix: str) -> str:
    return f"{prefix}-{next(_serial)}"


def diagnosis_data(fingerprint: str = "ab" * 8, *, category: str = "data_schema", exception: str | None = "KeyError",
                   message: str = "'conversations'", failing_rank: int | None = 1,
                   summary: str = "Rank 1 raised KeyError 'conversations' while reading a training sample",
                   **fields) -> dict:
    """A diagnosis JSON (docs/diagnosis.md) for a 2-rank torchrun job; keywords replace any field."""
    data = {
        "engine_version": "1.0.0", "category": category, "confidence": 0.9, "summary": summary,
        "launcher": "torchrun", "world_size": 2, "failing_rank": failing_rank,
        "root_cause": {"rank": failing_rank, "exception": exception, "message": message, "frames": [], "evidence": []},
        "ranks": [], "fixes": [], "memory": {"series": [], "estimate": None}, "fingerprint": fingerprint,
    }
    data.update(fields)
    return data


def make_team(name: str | None = None, **fields):
    from jobs.models import Team

    return Team.objects.create(name=name or _next("team"), **fields)


def make_user(username: str | None = None, team=None, *, role: str = "member", password: str = PASSWORD, **fields):
    """A user (email username@example.com), made a member of ``team`` with ``role`` when given."""
    from django.contrib.auth import get_user_model

    username = username or _next("user")
    user = get_user_model().objects.create_user(username, f"{username}@example.com", password, **fields)
    if team is not None:
        make_membership(team, user, role=role)
    return user


def make_membership(team, user, *, role: str = "member"):
    from jobs.models import Membership

    return Membership.objects.create(team=team, user=user, role=role)


def make_api_key(team, **fields):
    """(ApiKey row, raw key); the keywords are ApiKey.issue's (name, scope, expires_at, created_by)."""
    from jobs.models import ApiKey

    return ApiKey.issue(team, **fields)


def make_incident(team, *, diagnosis: dict | None = None, **fields):
    """An incident; with ``diagnosis`` (a diagnosis JSON) it is saved diagnosed, as the task would."""
    from jobs.models import Incident

    fields.setdefault("title", "job failed")
    incident = Incident.objects.create(team=team, **fields)
    if diagnosis is not None:
        make_diagnosis(incident, diagnosis)
        incident.refresh_from_db()
    return incident


def make_diagnosis(incident, data: dict | None = None):
    """The Diagnosis row for ``data`` and the incident's summary columns, as the diagnose task saves them."""
    from jobs.models import Diagnosis, Incident

    data = diagnosis_data() if data is None else data
    row = Diagnosis.objects.create(
        incident=incident,
        engine_version=data.get("engine_version", "1.0.0"),
        data=data,
        category=data.get("category", "unknown"),
        failing_rank=data.get("failing_rank"),
        fingerprint=data.get("fingerprint", "0" * 16),
    )
    Incident.objects.filter(pk=incident.pk).update(
        status=Incident.Status.DIAGNOSED,
        category=data.get("category", "unknown"),
        failing_rank=data.get("failing_rank"),
        exception=(data.get("root_cause") or {}).get("exception") or "",
        summary=data.get("summary", ""),
    )
    return row


def make_artifact(incident, name: str = "rank1.log", content: str | bytes = "[rank1]: KeyError: 'x'\n",
                  kind: str = "log"):
    """An artifact whose file is written to storage (settings.MEDIA_ROOT)."""
    from jobs.models import Artifact

    payload = content.encode() if isinstance(content, str) else content
    artifact = Artifact(incident=incident, kind=kind, original_name=name, size=len(payload), sha256="0" * 64)
    artifact.file.save(name, ContentFile(payload), save=True)
    return artifact


def make_webhook_endpoint(team, url: str = "https://hooks.example.com/triage", **fields):
    from jobs.models import WebhookEndpoint

    return WebhookEndpoint.objects.create(team=team, url=url, **fields)


def make_webhook_delivery(incident, endpoint=None, **fields):
    from jobs.models import WebhookDelivery

    fields.setdefault("url", endpoint.url if endpoint is not None else "https://hooks.example.com/callback")
    return WebhookDelivery.objects.create(incident=incident, endpoint=endpoint, **fields)


def make_problem(team, fingerprint: str | None = None, **fields):
    """A knowledge-base problem with no occurrences yet (see make_problem_occurrence, or knowledge.services.record)."""
    from django.utils import timezone

    from knowledge.models import Problem

    now = timezone.now()
    fields.setdefault("title", "KeyError 'conversations' while reading a sample")
    fields.setdefault("category", "data_schema")
    fields.setdefault("exception", "KeyError")
    fields.setdefault("first_seen", now)
    fields.setdefault("last_seen", now)
    return Problem.objects.create(team=team, fingerprint=fingerprint or _next("fp"), **fields)


def make_problem_occurrence(problem, incident):
    """Link an incident to a problem and count it, as knowledge.services.record does."""
    from django.db.models import F
    from django.utils import timezone

    from knowledge.models import Problem, ProblemOccurrence

    link = ProblemOccurrence.objects.create(
        problem=problem, incident=incident, team=problem.team, seen_at=timezone.now(),
        category=incident.category or problem.category, exception=incident.exception or problem.exception,
    )
    Problem.objects.filter(pk=problem.pk).update(occurrences=F("occurrences") + 1)
    problem.refresh_from_db()
    return link


def make_problem_hash(problem, kind: str = "fine", value: str | None = None):
    """One of the hashes an incident can match to join a problem (knowledge.grouping makes them)."""
    from knowledge.models import ProblemHash

    return ProblemHash.objects.create(team=problem.team, problem=problem, kind=kind, value=value or _next("h"))


def make_grouping_action(source, target, *, kind: str = "merge", actor=None, incident_ids=(1,), hash_ids=(1,)):
    """A merge or split done by hand, as recorded for undo (what moved: incidents and hashes)."""
    from knowledge.models import GroupingAction

    return GroupingAction.objects.create(
        team=source.team, kind=kind, source=source, target=target, actor=actor,
        incident_ids=list(incident_ids), hash_ids=list(hash_ids),
    )


def make_runbook(team, category: str = "gpu_oom", body: str = "1. Lower the batch.\n", **fields):
    """A team's runbook for one taxonomy category (Markdown)."""
    from knowledge.models import Runbook

    return Runbook.objects.create(team=team, category=category, body=body, **fields)


def make_evidence_sample(incident, evidence: str = "keyerror: 'conversations'", **fields):
    """A distinct masked evidence text of a team, used for similar-incident lookups."""
    from django.utils import timezone

    from knowledge.models import EvidenceSample

    fields.setdefault("category", incident.category or "data_schema")
    fields.setdefault("digest", _next("d"))
    fields.setdefault("seen_at", timezone.now())
    return EvidenceSample.objects.create(team=incident.team, incident=incident, evidence=evidence, **fields)
