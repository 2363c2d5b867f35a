"""Incidents for the repro tests: stored through the upload path, diagnosed by the real engine."""
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "jobs" / "demo"
CPU_RUNS = REPO_ROOT / "tests" / "fixtures" / "cpu_runs"


def upload(name: str, content: bytes | str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def diagnosed_incident(team, *, log: str, command: str = "", data: bytes | None = None, data_name="data.json",
                       script: bytes | None = None, script_name="train.py"):
    from jobs.tasks import run_engine, save_diagnosis
    from jobs.uploads import create_incident

    incident = create_incident(
        team=team, logs=[upload("train.log", log)], command=command,
        data=upload(data_name, data) if data is not None else None,
        config=upload(script_name, script) if script is not None else None, enqueue=False,
    )
    save_diagnosis(incident.pk, run_engine(incident))
    incident.refresh_from_db()
    return incident
