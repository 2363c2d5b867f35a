"""Real processes for the chaos tests: a private redis-server on a spare port (never the shared
one), gunicorn with deploy/gunicorn.conf.py, Celery workers and beat, nginx with deploy/nginx.conf.

Every process runs in its own session so that it can be killed with its children, and is killed
when the test module ends.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from tests.workers import REPO_ROOT, wait_for, worker_env

INJECT = Path(__file__).resolve().parent / "inject"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        return True
    except OSError:
        return False


def database_url(database: dict) -> str:
    credentials = quote(database.get("USER") or "")
    if database.get("PASSWORD"):
        credentials += ":" + quote(database["PASSWORD"])
    host = database.get("HOST") or "127.0.0.1"
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{quote(str(database['NAME']))}"


class Process:
    """One command in its own session, its output in a log file."""

    def __init__(self, name: str, command: list[str], *, env: dict, log_dir: Path, cwd: Path = REPO_ROOT):
        self.name, self.command, self.env, self.cwd = name, command, env, cwd
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> Process:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps writing to it
        self.process = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, sig=signal.SIGKILL) -> None:
        """The whole session: the process and every child it forked."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            self.kill(signal.SIGTERM)

    def children(self) -> list[int]:
        result = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.pid)], capture_output=True, text=True)
        return [int(pid) for pid in result.stdout.split()]

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return f"--- {self.name} ---\n" + "\n".join(self.log_text().splitlines()[-lines:])


class Rig:
    """A private Redis, the web server, workers and beat against the test database."""

    def __init__(self, database: dict, root: Path, *, engine_delay_s: float = 3.0):
        self.root = root
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.media = root / "media"
        self.var = root / "var"
        self.redis_port, self.web_port = free_port(), free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.env = worker_env(
            TRIAGE_DATABASE_URL=database_url(database), TRIAGE_REDIS_URL=self.redis_url,
            TRIAGE_MEDIA_ROOT=str(self.media), TRIAGE_VAR_DIR=str(self.var), TRIAGE_CELERY_EAGER="0",
            TRIAGE_HEARTBEAT_S="2", TRIAGE_QUEUED_DEADLINE_S="5", TRIAGE_SWEEP_EVERY_S="2",
            TRIAGE_VISIBILITY_TIMEOUT_S="30", TRIAGE_CHAOS_ENGINE_DELAY_S=str(engine_delay_s),
            TRIAGE_BIND=f"127.0.0.1:{self.web_port}", TRIAGE_WEB_WORKERS="1", TRIAGE_WEB_THREADS="4",
            TRIAGE_WEB_ACCESS_LOG="-", TRIAGE_LOG_LEVEL="INFO",
        )
        self.env["PYTHONPATH"] = os.pathsep.join([str(INJECT), self.env["PYTHONPATH"]])
        self.processes: list[Process] = []
        self.redis: Process | None = None
        self.web: Process | None = None
        self.workers: list[Process] = []
        self.beat: Process | None = None

    # --- services ---------------------------------------------------------------------------
    def start_redis(self) -> Process:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.redis = self._add(Process("redis", [binary, "--port", str(self.redis_port), "--bind", "127.0.0.1",
                                                 "--save", "", "--appendonly", "no"], env=self.env, log_dir=self.logs))
        wait_for(lambda: port_open(self.redis_port), timeout=20, describe=self.redis.tail)
        return self.redis

    def start_web(self) -> Process:
        self.web = self._add(Process("web", [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                                             "config.wsgi:application"], env=self.env, log_dir=self.logs))
        wait_for(lambda: port_open(self.web_port), timeout=60, describe=self.web.tail)
        return self.web

    def start_worker(self, name: str) -> Process:
        worker = self._add(Process(name, [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "diagnose", "-P", "prefork", "-c", "1",
            "-n", f"{name}-{self.redis_port}@%h", "-l", "INFO", "--without-gossip", "--without-mingle",
        ], env=self.env, log_dir=self.logs))
        wait_for(lambda: " ready." in worker.log_text() or not worker.alive(), timeout=60, describe=worker.tail)
        assert worker.alive(), worker.tail()
        self.workers.append(worker)
        return worker

    def start_beat(self) -> Process:
        self.beat = self._add(Process("beat", [
            sys.executable, "-m", "celery", "-A", "config", "beat", "-l", "INFO",
            "-s", str(self.root / "celerybeat-schedule"),
        ], env=self.env, log_dir=self.logs))
        return self.beat

    def start_nginx(self) -> Process:
        """Debian's nginx with deploy/nginx.conf, pointed at this rig's web server on a spare port."""
        self.nginx_port = free_port()
        folder = self.root / "nginx"
        for sub in ("body", "proxy"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)
        for sub in ("body", "proxy"):
            (folder / sub).chmod(0o777)  # nginx's workers drop root
        config = nginx_config(self.web_port, self.nginx_port, folder)
        (folder / "nginx.conf").write_text(config)
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.nginx = self._add(Process("nginx", [binary, "-c", str(folder / "nginx.conf"), "-p", str(folder),
                                                 "-e", str(folder / "error.log"), "-g", "daemon off;"],
                                       env=self.env, log_dir=self.logs))
        wait_for(lambda: port_open(self.nginx_port), timeout=20,
                 describe=lambda: self.nginx.tail() + (folder / "error.log").read_text(errors="replace")
                 if (folder / "error.log").exists() else self.nginx.tail())
        return self.nginx

    def _add(self, process: Process) -> Process:
        self.processes.append(process.start())
        return process

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            process.kill()

    def tails(self) -> str:
        return "\n".join(process.tail() for process in self.processes)

    def diagnosed_results(self) -> int:
        """How many diagnoses the workers saved, counted from their logs (a task returns
        'diagnosed' only when its result was stored)."""
        return sum(worker.log_text().count(": 'diagnosed'") for worker in self.workers)

    def orphans(self) -> list[str]:
        """Files a request or task left in the staging, temporary upload and work folders."""
        found = []
        for name in ("staging", "upload-tmp", "work"):
            folder = self.var / name
            if folder.is_dir():
                found += [str(path) for path in folder.rglob("*")]
        return found


NGINX_SUBSTITUTIONS = {
    "pid /run/nginx.pid;": "pid {folder}/nginx.pid;",
    "error_log /dev/stderr warn;": "error_log {folder}/error.log warn;",
    "access_log /dev/stdout;": "access_log {folder}/access.log;",
    "client_body_temp_path /var/lib/nginx/body 1 2;": "client_body_temp_path {folder}/body 1 2;",
    "proxy_temp_path /var/lib/nginx/proxy 1 2;": "proxy_temp_path {folder}/proxy 1 2;",
    "server web:8000 max_fails=0;": "server 127.0.0.1:{web_port} max_fails=0;",
    "listen 8000;": "listen 127.0.0.1:{port};",
}


def nginx_config(web_port: int, port: int, folder: Path) -> str:
    """deploy/nginx.conf with its addresses and paths moved to loopback ports and a temp folder;
    every other directive (timeouts, buffering) is the production one."""
    config = (REPO_ROOT / "deploy" / "nginx.conf").read_text()
    for old, new in NGINX_SUBSTITUTIONS.items():
        assert config.count(old) == 1, f"deploy/nginx.conf no longer has {old!r}"
        config = config.replace(old, new.format(folder=folder, web_port=web_port, port=port))
    return config


def wait_until(predicate, timeout: float, describe=None):
    return wait_for(predicate, timeout=timeout, interval=0.1, describe=describe)


def now() -> float:
    return time.monotonic()
