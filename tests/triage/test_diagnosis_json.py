"""The Diagnosis data classes round-trip through the CONTRACT JSON."""

from __future__ import annotations

import json

from triage_helpers import FIXTURES

from triage import ENGINE_VERSION, Diagnosis, diagnose


def test_it_round_trips_through_json():
    result = diagnose([FIXTURES / "rules" / "cascades_match.log"], command="torchrun --nproc_per_node 2 t.py")
    data = json.loads(json.dumps(result.to_dict()))
    again = Diagnosis.from_dict(data)
    assert again.to_dict() == data
    assert data["engine_version"] == ENGINE_VERSION


def test_it_describes_every_rank_with_bounded_events():
    result = diagnose([FIXTURES / "rules" / "cascades_match.log"], command="torchrun --nproc_per_node 2 t.py")
    ranks = result.to_dict()["ranks"]
    assert [rank["rank"] for rank in ranks] == [0, 1]
    for rank in ranks:
        assert {"rank", "status", "exit_code", "events"} <= set(rank)
        assert len(rank["events"]) <= 50
        for event in rank["events"]:
            assert {"t", "seq", "kind", "text"} <= set(event)


def test_it_has_a_plain_summary_and_a_confidence_between_zero_and_one():
    result = diagnose([FIXTURES / "rules" / "memory_match.log"])
    assert 0 < result.confidence <= 1
    assert "out of memory" in result.summary.lower() or "OutOfMemoryError" in result.summary


def test_it_never_imports_django_or_the_web_apps():
    import subprocess
    import sys

    code = (
        "import sys, triage, triage.cli; triage.diagnose; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', 'celery', 'config', 'jobs')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
