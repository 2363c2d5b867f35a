"""API stories: alice (admin) and bob on Alpha, charlie on Bravo; each team has keys."""
import io

import pytest
from rest_framework.test import APIClient


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(fresh_cache):
    """Throttle counters start at zero in every API test."""


@pytest.fixture
def issue_key(db):
    from tests.factories import make_api_key

    return make_api_key


@pytest.fixture
def alpha_key(alpha, alice, issue_key):
    return issue_key(alpha, name="alpha-slurm", created_by=alice)[1]


@pytest.fixture
def alpha_read_key(alpha, issue_key):
    from jobs.models import ApiKey

    return issue_key(alpha, name="alpha-dashboards", scope=ApiKey.Scope.READ)[1]


@pytest.fixture
def bravo_key(bravo, charlie, issue_key):
    return issue_key(bravo, name="bravo-k8s", created_by=charlie)[1]


@pytest.fixture
def client_with():
    def make(raw_key, keyword="Token"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{keyword} {raw_key}")
        return client

    return make


@pytest.fixture
def alpha_api(alpha_key, client_with):
    return client_with(alpha_key)


@pytest.fixture
def bravo_api(bravo_key, client_with):
    return client_with(bravo_key)


LOG_TEXT = (
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"train.py\", line 210, in __getitem__\n"
    "[rank1]: KeyError: 'conversations'\n"
)


def log_file(name="rank1.log", text=LOG_TEXT):
    handle = io.BytesIO(text.encode())
    handle.name = name
    return handle


DIAGNOSIS = {
    "engine_version": "1.0.0",
    "category": "data_schema",
    "confidence": 0.92,
    "summary": "Rank 1 raised KeyError 'conversations' while reading a training sample",
    "launcher": "torchrun",
    "world_size": 2,
    "failing_rank": 1,
    "root_cause": {"rank": 1, "exception": "KeyError", "message": "'conversations'", "frames": [], "evidence": []},
    "ranks": [
        {"rank": 0, "status": "terminated", "exit_code": -15,
         "events": [{"t": None, "seq": 12, "kind": "sigterm", "text": "SIGTERM"}]},
        {"rank": 1, "status": "failed", "exit_code": 1,
         "events": [{"t": None, "seq": 3, "kind": "exception", "text": "KeyError"}]},
    ],
    "fixes": [],
    "memory": {"series": [{"rank": 0, "name": "allocated", "points": [[1, 10.5]]}], "estimate": None},
    "fingerprint": "ab" * 8,
}
