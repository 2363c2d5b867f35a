"""Chaos tests run real processes against the test database: they need PostgreSQL and redis-server."""
import json
import os

import pytest
from django.conf import settings

from tests.integration.conftest import require


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="module")
def postgres_database(django_db_setup):
    database = settings.DATABASES["default"]
    require(database["ENGINE"].endswith("postgresql"), "chaos tests need TRIAGE_DATABASE_URL (PostgreSQL)")
    return database


@pytest.fixture
def fault_report():
    """Each chaos test records (fault, injected, survived, lost); bench/chaos_faults.py prints the table."""
    path = os.environ.get("TRIAGE_CHAOS_REPORT")

    def record(fault: str, injected: int, survived: int, lost: int) -> None:
        if path:
            with open(path, "a") as handle:
                handle.write(json.dumps({"fault": fault, "injected": injected, "survived": survived,
                                         "lost": lost}) + "\n")

    return record
