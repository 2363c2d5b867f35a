"""The integration kit: triage-submit (stdlib client) and the Slurm epilog, against a live server."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from contrib import triage_submit
from jobs.models import Incident

REPO = Path(__file__).resolve().parents[2]
EPILOG = REPO / "contrib" / "slurm" / "triage-epilog.sh"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def quiet_enqueue(monkeypatch):
    monkeypatch.setattr("jobs.uploads._enqueue", lambda pk: None)


@pytest.fixture
def log_path(tmp_path):
    path = tmp_path / "slurm-981.out"
    path.write_text("[rank1]: KeyError: 'conversations'\n")
    return path


def test_it_submits_with_triage_submit_and_retries_safely(live_server, alpha_key, log_path, quiet_enqueue, capsys):
    argv = ["--url", live_server.url, "--key", alpha_key, "--job-id", "981", "--attempt", "0",
            "--scheduler", "slurm", "--command", "torchrun --nproc-per-node 2 train.py", str(log_path)]
    assert triage_submit.main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert triage_submit.main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert first["id"] == again["id"] and first["status"] == "queued"
    incident = Incident.objects.get()
    assert incident.command.startswith("torchrun") and incident.artifacts.get().original_name == "slurm-981.out"


def test_it_reports_a_refused_key(live_server, log_path, capsys):
    assert triage_submit.main(["--url", live_server.url, "--key", "trg_nope", str(log_path)]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "authentication_failed"


def test_it_gives_up_on_an_unreachable_server(log_path, capsys, monkeypatch):
    monkeypatch.setattr(triage_submit.time, "sleep", lambda seconds: None)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status, answer = triage_submit.submit(f"http://127.0.0.1:{port}", "trg_x", {}, [("files", log_path)],
                                          idempotency_key="k", retries=1, log=sys.stderr)
    assert status == 0 and answer["error"]["code"] == "unreachable"


def _fake_scontrol(tmp_path, state, log_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        f"echo 'JobId=981 JobName=sft UserId=alice(1000) JobState={state} Restarts=1 ExitCode=1:0 "
        f"BatchHost={socket.gethostname()} Command=/nonexistent/run.sh StdOut={log_path} StdErr={log_path} "
        "ClusterName=a100'\n"
    )
    script.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(("state", "made"), [("FAILED", 1), ("NODE_FAIL", 1), ("COMPLETED", 0)])
def test_it_submits_failed_slurm_jobs_from_the_epilog(live_server, alpha_key, log_path, tmp_path, quiet_enqueue,
                                                      state, made):
    env_file = tmp_path / "epilog.env"
    env_file.write_text(f"TRIAGE_URL={live_server.url}\nTRIAGE_API_KEY={alpha_key}\n")
    env = {**os.environ, "PATH": f"{_fake_scontrol(tmp_path, state, log_path)}:{os.environ['PATH']}",
           "SLURM_JOB_ID": "981", "TRIAGE_EPILOG_ENV": str(env_file), "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
    result = subprocess.run(["bash", str(EPILOG)], env=env, capture_output=True, timeout=120)
    assert result.returncode == 0
    assert Incident.objects.count() == made
    if made:
        incident = Incident.objects.get()
        assert (incident.job_id, incident.attempt, incident.scheduler, incident.cluster) == ("981", "1", "slurm", "a100")


def test_it_exits_0_from_the_epilog_even_without_configuration(tmp_path):
    env = {**os.environ, "SLURM_JOB_ID": "1", "TRIAGE_EPILOG_ENV": str(tmp_path / "missing.env")}
    env.pop("TRIAGE_URL", None)
    assert subprocess.run(["bash", str(EPILOG)], env=env, capture_output=True, timeout=60).returncode == 0
