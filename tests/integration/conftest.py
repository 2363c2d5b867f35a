"""Integration tests run real services: PostgreSQL, Redis, a Celery worker process.

Without them they skip, unless TRIAGE_REQUIRE_SERVICES=1 (set by scripts/test-services.sh),
which turns a missing service into a failure: CI must never pass by skipping.
"""
import os

import pytest


def require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("TRIAGE_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{reason} (TRIAGE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)
