"""Story: whatever the engine says about a real crash log, the incident page and its charts render."""
import pytest
from django.urls import reverse

from tests.conftest import SHARED_CORPUS
from tests.pages.factories import add_artifact

CASES = sorted(p for p in SHARED_CORPUS.glob("*") if (p / "truth.json").exists()) if SHARED_CORPUS.exists() else []


@pytest.mark.skipif(not CASES, reason="the shared corpus is not here")
def test_every_corpus_case_renders(alice_client, alpha, make_incident, subtests):
    from triage import diagnose

    for case in CASES:
        logs = [p for p in sorted(case.rglob("*")) if p.is_file() and p.name not in {"truth.json", "command.txt"}]
        with subtests.test(case=case.name):
            command_file = case / "command.txt"
            command = command_file.read_text() if command_file.exists() else ""
            data = diagnose([str(p) for p in logs], command=command or None).to_dict()
            incident = make_incident(alpha, diagnosis=data, command=command)
            for path in logs[:5]:
                add_artifact(incident, str(path.relative_to(case)), path.read_bytes())
            for name in ("jobs:incident_detail", "jobs:incident_timeline_json", "jobs:incident_memory_json"):
                assert alice_client.get(reverse(name, args=[incident.pk])).status_code == 200, name
