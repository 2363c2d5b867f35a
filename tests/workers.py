"""A real Celery worker in a subprocess, for integration tests.

    with CeleryWorker(env=worker_env(TRIAGE_DATABASE_URL=url), queues="diagnose") as worker:
        ...  # enqueue work, then wait_for(lambda: ..., timeout=60, describe=worker.log_tail)

The worker runs `celery -A config worker` from the repository root with its own environment
(pass None to drop a variable inherited from the test process). start() returns once the worker
logged "ready."; stop() ends it with SIGTERM, then SIGKILL, so no test leaves one behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def worker_env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env.setdefault("TRIAGE_LOG_LEVEL", "INFO")
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 0.2,
             describe: Callable[[], str] | None = None):
    """Poll until predicate() is truthy and return its value; fail with a description at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = describe() if describe else ""
            raise AssertionError(f"condition not met within {timeout:.0f}s\n{detail}")
        time.sleep(interval)


class CeleryWorker:
    def __init__(self, *, env: dict[str, str] | None = None, queues: str = "diagnose", pool: str = "solo",
                 concurrency: int = 1, cwd: Path = REPO_ROOT, log_path: Path | None = None):
        self.env = env or worker_env()
        self.queues, self.pool, self.concurrency, self.cwd = queues, pool, concurrency, cwd
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="celery-worker-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queues, "-P", self.pool,
            "-c", str(self.concurrency), "-n", f"test-{uuid.uuid4().hex[:8]}@%h", "-l", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]

    def start(self, timeout: float = 60) -> CeleryWorker:
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child keeps writing to it
        self.process = subprocess.Popen(
            self.command(), cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

        def ready():
            if self.process.poll() is not None:
                raise AssertionError(f"the Celery worker exited with {self.process.returncode}\n{self.log_tail()}")
            return " ready." in self.log_text()

        wait_for(ready, timeout=timeout, interval=0.2, describe=self.log_tail)
        return self

    def stop(self, timeout: float = 20) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # our own session: the worker and its pool children
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "--- worker log (tail) ---\n" + "\n".join(self.log_text().splitlines()[-lines:])

    def __enter__(self) -> CeleryWorker:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
