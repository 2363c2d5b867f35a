"""A real two-node `torchrun --log-dir` run, uploaded as one .tar.gz, is diagnosed end to end."""
import io
import tarfile
from pathlib import Path

from jobs.models import Incident
from jobs.tasks import diagnose_incident
from jobs.uploads import create_incident
from tests.jobs.upload_builders import upload

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "cpu_runs" / "cpu-multinode-rank3"


def _tar_gz_of_log_dirs() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(CASE / "logs", arcname="logs")
    return buffer.getvalue()


def test_it_finds_global_rank_three_on_the_second_node(alice):
    incident = create_incident(
        team=alice.teams.get(),
        logs=[upload("job-4242-logs.tar.gz", _tar_gz_of_log_dirs())],
        command=(CASE / "command.txt").read_text(),
    )
    member_names = set(incident.artifacts.values_list("original_name", flat=True))
    assert any(name.endswith("attempt_0/1/stderr.log") and "/node1/" in name for name in member_names)

    diagnose_incident(incident.pk)

    incident.refresh_from_db()
    assert incident.status == Incident.Status.DIAGNOSED, incident.status_reason
    data = incident.diagnosis.data
    assert (data["category"], data["failing_rank"]) == ("data_corrupt", 3)
    assert data["root_cause"]["exception"] == "UnicodeDecodeError"
    assert any("/node1/" in item["source"] for item in data["root_cause"]["evidence"])
