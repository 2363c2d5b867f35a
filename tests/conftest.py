"""Fixtures every test folder shares, built on tests/factories.py.

The story: alice (admin) and bob (member) are on team Alpha, charlie (admin) is on team Bravo.
Each test that touches Django gets its own media folder. Engine-only runs (`-p no:django`) use none
of this: Django is not set up there.
"""
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


@pytest.fixture(autouse=True)
def media_root(request, tmp_path):
    """Files a test stores land in its own folder (None in engine-only runs)."""
    if not request.config.pluginmanager.has_plugin("django"):
        return None
    root = tmp_path / "media"
    root.mkdir()
    request.getfixturevalue("settings").MEDIA_ROOT = root
    return root


@pytest.fixture
def fresh_cache():
    """An empty cache before and after the test (throttle counters, cached pages). Not autouse: with
    Redis as the cache, clearing it would also clear a Celery worker's queue."""
    from django.core.cache import cache

    cache.clear()
    yield cache
    cache.clear()


@pytest.fixture
def alpha(db):
    from tests.factories import make_team

    return make_team("Alpha")


@pytest.fixture
def bravo(db):
    from tests.factories import make_team

    return make_team("Bravo")


@pytest.fixture
def alice(alpha):
    from tests.factories import make_user

    return make_user("alice", alpha, role="admin")


@pytest.fixture
def bob(alpha):
    from tests.factories import make_user

    return make_user("bob", alpha, role="member")


@pytest.fixture
def charlie(bravo):
    from tests.factories import make_user

    return make_user("charlie", bravo, role="admin")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(alice, bob):
    from django.test import Client

    browser = Client()
    browser.force_login(bob)
    return browser


@pytest.fixture
def charlie_client(charlie):
    from django.test import Client

    browser = Client()
    browser.force_login(charlie)
    return browser


@pytest.fixture
def api_as(db):
    """A DRF client holding a new API key of the team: api_as(team, scope=..., name=...)."""
    from rest_framework.test import APIClient

    from tests.factories import make_api_key

    def make(team, **kwargs):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {make_api_key(team, **kwargs)[1]}")
        return client

    return make


@pytest.fixture
def make_incident(db):
    """Factory for incidents, with an optional diagnosis JSON (tests.factories.make_incident)."""
    from tests.factories import make_incident

    return make_incident
