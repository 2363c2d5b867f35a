"""End to end on a laptop's defaults: SQLite file + Celery filesystem broker in a fresh var folder,
no services at all. Driven through subprocesses because pytest's own database is PostgreSQL."""
import sqlite3
import subprocess
import sys

import pytest

from tests.conftest import SEED_CASE
from tests.workers import REPO_ROOT, CeleryWorker, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SEED = SEED_CASE

CREATE_INCIDENT = """
import sys
import django
django.setup()
from django.core.files import File
from jobs.models import Team
from jobs.uploads import create_incident

team, _ = Team.objects.get_or_create(name="Laptop")
with open(sys.argv[1], "rb") as log, open(sys.argv[2]) as command:
    incident = create_incident(team=team, logs=[File(log, name="log.txt")], command=command.read())
print(incident.pk)
"""


@pytest.fixture
def laptop_env(tmp_path):
    return worker_env(
        TRIAGE_VAR_DIR=str(tmp_path / "var"), TRIAGE_DATABASE_URL=None, TRIAGE_REDIS_URL=None,
        TRIAGE_MEDIA_ROOT=None, TRIAGE_STATIC_ROOT=None, TRIAGE_CELERY_EAGER=None,
    )


def run(args, env):
    result = subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_it_diagnoses_on_sqlite_and_the_filesystem_broker(laptop_env, tmp_path):
    run(["manage.py", "migrate", "--noinput", "-v0"], laptop_env)
    database = tmp_path / "var" / "triage.sqlite3"
    assert database.exists()
    with CeleryWorker(env=laptop_env, queues="diagnose", pool="solo", log_path=tmp_path / "worker.log") as worker:
        incident_pk = int(run(["-c", CREATE_INCIDENT, str(SEED / "log.txt"), str(SEED / "command.txt")],
                              laptop_env).strip().splitlines()[-1])

        def status():
            with sqlite3.connect(database, timeout=20) as connection:
                row = connection.execute("SELECT status, status_reason, category FROM jobs_incident WHERE id = ?",
                                         (incident_pk,)).fetchone()
            return row if row and row[0] in ("diagnosed", "failed") else None

        state, reason, category = wait_for(status, timeout=90, interval=0.5, describe=worker.log_tail)
    assert state == "diagnosed", f"{reason}\n{worker.log_tail()}"
    assert category == "data_schema"
    with sqlite3.connect(database) as connection:
        stored = connection.execute("SELECT category, failing_rank FROM jobs_diagnosis WHERE incident_id = ?",
                                    (incident_pk,)).fetchone()
    assert stored == ("data_schema", 1)
    assert list((tmp_path / "var" / "media").rglob("*")), "the artifact is stored under the var folder"
