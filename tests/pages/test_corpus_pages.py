"""Story: whatever the engine says about a labelled case, the incident page and its charts render."""
from django.urls import reverse

from tests.conftest import CPU_RUNS, REPO_ROOT
from tests.pages.factories import add_artifact
from triage.scoring import find_cases

SETS = [CPU_RUNS, REPO_ROOT / "tests" / "triage" / "fixtures" / "variants",
        REPO_ROOT / "tests" / "triage" / "fixtures" / "blind"]
CASES = [case for cases in SETS for case in find_cases(cases)]


def test_every_labelled_case_renders(alice_client, alpha, make_incident, subtests):
    from triage import diagnose

    assert len(CASES) >= 100, "the repository's labelled sets are missing"
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
