"""Chaos: real processes, real faults. Every incident is diagnosed exactly once within 2 minutes
and no orphan file remains, through
- kill -9 of the pool child running a diagnosis (what the OOM killer does),
- kill -9 of a whole worker mid-diagnosis while another worker lives,
- the broker stopped at submit and brought back (reads and submits keep answering meanwhile),
- kill -9 of the web server mid-upload.
The tests share one rig and run in this order (each fault once)."""
import signal
import time

import pytest

from jobs.models import ApiKey, Artifact, Incident, Team
from tests.chaos.rig import Process, Rig, wait_until
from tests.chaos.webclient import request, submit

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
DEADLINE_S = 120
LOG = (b"[rank1]: Traceback (most recent call last):\n"
       b'[rank1]:   File "/srv/ft/train.py", line 40, in <module>\n'
       b"[rank1]: KeyError: 'conversations'\n")


@pytest.fixture(scope="module")
def rig(postgres_database, tmp_path_factory):
    rig = Rig(postgres_database, tmp_path_factory.mktemp("chaos"), engine_delay_s=3.0)
    try:
        rig.start_redis()
        rig.start_web()
        rig.start_worker("worker-a")
        rig.start_worker("worker-b")
        rig.start_beat()
        yield rig
    finally:
        rig.stop_all()


@pytest.fixture
def api_key(db):
    team = Team.objects.create(name="Chaos")
    return ApiKey.issue(team, name="chaos")[1]


def answers(port: int, key: str) -> bool:
    try:
        return request(port, "GET", "/api/v1/incidents/", key=key, timeout=5)[0] == 200
    except OSError:  # still starting
        return False


def status_of(pk: int) -> str:
    return Incident.objects.filter(pk=pk).values_list("status", flat=True).first()


def submit_one(rig: Rig, key: str) -> int:
    code, body = submit(rig.web_port, key, LOG)
    assert code == 202, (code, body, rig.tails())
    return body["id"]


def busy_worker(rig: Rig, received_before: dict) -> Process:
    def find():
        for worker in rig.workers:
            if worker.alive() and worker.log_text().count("diagnose_incident[") > received_before[worker.name]:
                return worker
        return None

    return wait_until(find, timeout=30, describe=rig.tails)


def received_counts(rig: Rig) -> dict:
    return {worker.name: worker.log_text().count("diagnose_incident[") for worker in rig.workers}


def wait_diagnosed(rig: Rig, pk: int, started: float) -> float:
    wait_until(lambda: status_of(pk) in ("diagnosed", "failed"), timeout=DEADLINE_S - (time.monotonic() - started),
               describe=rig.tails)
    incident = Incident.objects.get(pk=pk)
    assert incident.status == "diagnosed", (incident.status_reason, rig.tails())
    return time.monotonic() - started


def test_kill_9_of_the_pool_child_running_a_diagnosis(rig, api_key, fault_report):
    done_before, received = rig.diagnosed_results(), received_counts(rig)
    started = time.monotonic()
    pk = submit_one(rig, api_key)
    worker = busy_worker(rig, received)
    wait_until(lambda: status_of(pk) == "diagnosing", timeout=30, describe=rig.tails)
    children = worker.children()
    assert len(children) == 1
    import os

    os.kill(children[0], signal.SIGKILL)
    took = wait_diagnosed(rig, pk, started)
    assert "Attempt 1 was lost" not in Incident.objects.get(pk=pk).status_reason  # cleared once diagnosed
    wait_until(lambda: rig.diagnosed_results() == done_before + 1, timeout=10, describe=rig.tails)
    time.sleep(3)  # a duplicate run would finish within the engine delay
    assert rig.diagnosed_results() == done_before + 1, rig.tails()
    assert "WorkerLostError" in worker.log_text()
    fault_report("kill -9 pool child mid-diagnosis", 1, 1, 0)
    print(f"pool child killed: diagnosed after {took:.1f} s")


def test_kill_9_of_a_whole_worker_mid_diagnosis(rig, api_key, fault_report):
    done_before, received = rig.diagnosed_results(), received_counts(rig)
    started = time.monotonic()
    pk = submit_one(rig, api_key)
    worker = busy_worker(rig, received)
    wait_until(lambda: status_of(pk) == "diagnosing", timeout=30, describe=rig.tails)
    worker.kill(signal.SIGKILL)
    took = wait_diagnosed(rig, pk, started)
    wait_until(lambda: rig.diagnosed_results() == done_before + 1, timeout=10, describe=rig.tails)
    time.sleep(3)
    assert rig.diagnosed_results() == done_before + 1, rig.tails()
    rig.workers.remove(worker)
    rig.start_worker(f"{worker.name}-again")
    fault_report("kill -9 whole worker mid-diagnosis", 1, 1, 0)
    print(f"worker killed: diagnosed after {took:.1f} s")


def test_broker_stopped_at_submit_and_brought_back(rig, api_key, fault_report):
    done_before = rig.diagnosed_results()
    rig.redis.kill(signal.SIGKILL)
    started = time.monotonic()
    pks = []
    for _ in range(3):
        before = time.monotonic()
        pks.append(submit_one(rig, api_key))
        assert time.monotonic() - before < 10  # the submit does not hang on the broker
    code, body = request(rig.web_port, "GET", "/api/v1/incidents/", key=api_key)
    assert code == 200 and body["count"] == 3, (code, body)
    assert {status_of(pk) for pk in pks} == {"queued"}
    time.sleep(2)
    redis = Process("redis-again", rig.redis.command, env=rig.env, log_dir=rig.logs).start()
    rig.processes.append(redis)
    rig.redis = redis
    for pk in pks:
        wait_diagnosed(rig, pk, started)
    wait_until(lambda: rig.diagnosed_results() == done_before + 3, timeout=10, describe=rig.tails)
    time.sleep(3)
    assert rig.diagnosed_results() == done_before + 3, rig.tails()
    fault_report("broker down at submit, then back", 3, 3, 0)


def test_kill_9_of_the_web_server_mid_upload_leaves_no_orphan(rig, api_key, fault_report, settings):
    import socket

    from jobs.staging import sweep_orphans
    from tests.chaos.webclient import multipart

    body, content_type = multipart([("files", "big.log", b"step 1 loss 2.0\n" * 3_000_000)])
    connection = socket.create_connection(("127.0.0.1", rig.web_port))
    connection.sendall((f"POST /api/v1/incidents/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {api_key}\r\n"
                        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n").encode())
    connection.sendall(body[: len(body) // 2])
    upload_tmp = rig.var / "upload-tmp"
    wait_until(lambda: any(upload_tmp.iterdir()), timeout=30, describe=rig.tails)  # Django is streaming it to disk
    rig.web.kill(signal.SIGKILL)
    connection.close()
    assert rig.orphans(), "the kill left nothing behind: the fault was not injected"
    rig.web = Process("web-again", rig.web.command, env=rig.env, log_dir=rig.logs).start()
    rig.processes.append(rig.web)
    wait_until(lambda: answers(rig.web_port, api_key), timeout=60, describe=rig.tails)
    assert Incident.objects.count() == 0

    settings.VAR_DIR, settings.MEDIA_ROOT = rig.var, rig.media
    settings.FILE_UPLOAD_TEMP_DIR = str(upload_tmp)
    sweep_orphans(grace_s=0)  # the periodic sweep, without waiting for the grace period
    assert rig.orphans() == []
    on_disk = {path.relative_to(rig.media).as_posix() for path in (rig.media / "artifacts").rglob("*")
               if path.is_file()} if (rig.media / "artifacts").is_dir() else set()
    assert on_disk <= set(Artifact.objects.values_list("file", flat=True))
    fault_report("kill -9 web server mid-upload", 1, 1, 0)
