"""Shared story fixtures: alice owns team Alpha, bob is on her team, charlie is not (team Bravo)."""
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The project's own labelled cases (real CPU runs of tests/fixtures/cpu_runs/make_cases.py).
CPU_RUNS = REPO_ROOT / "tests" / "fixtures" / "cpu_runs"
# The seed case: rank 1 of a 2-rank torchrun job reads an alpaca row from a ShareGPT file and raises
# KeyError 'conversations' (category data_schema, failing rank 1).
SEED_CASE = CPU_RUNS / "cpu-data-schema-tee"


def pytest_configure(config):
    # The real hasher costs about a second per story user on two cores. (Engine-only runs
    # use `-p no:django`, where Django is not set up at all.)
    if config.pluginmanager.has_plugin("django"):
        from django.conf import settings

        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alpha(db):
    from jobs.models import Team

    return Team.objects.create(name="Alpha")


@pytest.fixture
def bravo(db):
    from jobs.models import Team

    return Team.objects.create(name="Bravo")


def _member(username, team, role):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    user = get_user_model().objects.create_user(username, f"{username}@example.com", "correct-horse-battery")
    Membership.objects.create(team=team, user=user, role=role)
    return user


@pytest.fixture
def alice(alpha):
    return _member("alice", alpha, "admin")


@pytest.fixture
def bob(alpha):
    return _member("bob", alpha, "member")


@pytest.fixture
def charlie(bravo):
    return _member("charlie", bravo, "admin")


@pytest.fixture
def make_incident(db):
    """Factory for incidents, with an optional diagnosis JSON."""
    from jobs.models import Diagnosis, Incident

    def make(team, *, diagnosis=None, **fields):
        fields.setdefault("title", "job failed")
        incident = Incident.objects.create(team=team, **fields)
        if diagnosis is not None:
            Diagnosis.objects.create(
                incident=incident,
                engine_version=diagnosis.get("engine_version", "1.0.0"),
                data=diagnosis,
                category=diagnosis.get("category", "unknown"),
                failing_rank=diagnosis.get("failing_rank"),
                fingerprint=diagnosis.get("fingerprint", "0" * 16),
            )
            Incident.objects.filter(pk=incident.pk).update(
                status=Incident.Status.DIAGNOSED,
                category=diagnosis.get("category", "unknown"),
                failing_rank=diagnosis.get("failing_rank"),
                exception=(diagnosis.get("root_cause") or {}).get("exception") or "",
                summary=diagnosis.get("summary", ""),
            )
            incident.refresh_from_db()
        return incident

    return make
