#!/usr/bin/env python3
"""Load benchmark: 16 concurrent clients submitting a 5 MB log, then small logs, to a locally
started gunicorn run with the production settings (deploy/gunicorn.conf.py: threaded workers).

    .venv/bin/python bench/api_load.py [--clients 16] [--requests 160] [--size-mb 5] [--workers 4] [--nginx]

Uses a throwaway var folder (SQLite, filesystem broker, media) unless TRIAGE_DATABASE_URL is set;
the diagnosis worker does not run. Prints p50/p90/p99 of the submit round trip (goal for 5 MB:
p99 < 1 s on 2 cores), then the throughput and p99 of small-log submits (8 clients).
"""
from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def make_log(size_bytes: int) -> bytes:
    lines, total, step = [], 0, 0
    while total < size_bytes:
        rank = step % 8
        line = (f"[rank{rank}]:[2026-11-30 21:{step // 600 % 60:02d}:{step % 60:02d}] step {step} "
                f"loss={2.5 - (step % 1000) / 1000:.4f} lr=2.0e-05 grad_norm=0.{step % 97:02d} "
                f"mem_allocated=61.{step % 10}GiB tokens/s=1843\n")
        lines.append(line)
        total += len(line)
        step += 1
    lines.append("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    return "".join(lines).encode()[: size_bytes]


def multipart(log: bytes, boundary: str) -> bytes:
    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="command"\r\n\r\n'
        "torchrun --nproc-per-node 8 train.py\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="rank-all.log"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + log + f"\r\n--{boundary}--\r\n".encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env, *args, capture=False):
    return subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=env, check=True,
                          capture_output=capture, text=True)


def setup_server(args, var_dir: Path):
    env = {**os.environ, "TRIAGE_VAR_DIR": str(var_dir), "TRIAGE_SUBMIT_RATE": "1000000/min",
           "TRIAGE_API_RATE": "1000000/min", "TRIAGE_LOG_LEVEL": "WARNING", "TRIAGE_DEBUG": "0",
           "TRIAGE_SECRET_KEY": "bench-" + "x" * 40}
    if not args.redis:  # nothing consumes the diagnose queue here: keep its messages in the throwaway folder
        env.pop("TRIAGE_REDIS_URL", None)
    manage(env, "migrate", "--verbosity", "0")
    code = ("from jobs.models import Team, ApiKey; import uuid; "
            "team = Team.objects.create(name='bench-' + uuid.uuid4().hex[:8]); print(ApiKey.issue(team)[1])")
    key = manage(env, "shell", "-c", code, capture=True).stdout.strip().splitlines()[-1]
    port = free_port()
    env.update(TRIAGE_BIND=f"127.0.0.1:{port}", TRIAGE_WEB_WORKERS=str(args.workers),
               TRIAGE_WEB_THREADS=str(args.threads), TRIAGE_WEB_ACCESS_LOG="/dev/null")
    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "config.wsgi", "--log-level", "warning"],
        cwd=REPO, env=env,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/schema/")
            conn.getresponse().read()
            return server, port, key
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit("gunicorn did not start")


def load(port, key, body, boundary, *, clients, requests, warmup):
    """Submit `body` requests+warmup times from `clients` threads; return (latencies s, statuses, wall s)."""
    latencies, statuses, lock = [], {}, threading.Lock()
    remaining = iter(range(requests + warmup))

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                n = next(remaining, None)
            if n is None:
                break
            headers = {"Authorization": f"Token {key}", "Content-Type": f"multipart/form-data; boundary={boundary}",
                       "Content-Length": str(len(body)), "Idempotency-Key": f"bench-{uuid.uuid4().hex}"}
            started = time.perf_counter()
            try:
                conn.request("POST", "/api/v1/incidents/", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = "error"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            elapsed = time.perf_counter() - started
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if n >= warmup:
                    latencies.append(elapsed)
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(latencies), statuses, time.perf_counter() - started


def start_nginx(web_port: int, var_dir: Path):
    """Debian's nginx with deploy/nginx.conf (as tests/chaos runs it) in front of gunicorn."""
    sys.path.insert(0, str(REPO))
    from tests.chaos.rig import nginx_config

    port, folder = free_port(), var_dir / "nginx"
    var_dir.chmod(0o711)  # nginx's workers (www-data) reach their temp folders through it
    for sub in ("body", "proxy"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        (folder / sub).chmod(0o777)  # nginx's workers drop root
    folder.chmod(0o777)
    (folder / "nginx.conf").write_text(nginx_config(web_port, port, folder))
    process = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(folder / "nginx.conf"),
                                "-p", str(folder), "-e", str(folder / "error.log"), "-g", "daemon off;"])
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return process, port
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit("nginx did not start")


def server_cpu_s(*root_pids: int) -> float:
    """User + system CPU seconds of the servers and their workers so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid in root_pids or ppid in root_pids:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def percentile(ms, p):
    return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]


def run(args):
    log = make_log(args.size_mb * 1024 * 1024)
    boundary = "bench" + uuid.uuid4().hex
    body = multipart(log, boundary)
    small = multipart(make_log(2048), boundary)
    var_dir = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    server, port, key = setup_server(args, var_dir)
    load_before = os.getloadavg()[0]
    proxy = None
    try:
        pids = [server.pid]
        if args.nginx:
            proxy, port = start_nginx(port, var_dir)
            pids.append(proxy.pid)
        cpu_before = server_cpu_s(*pids)
        latencies, statuses, wall = load(port, key, body, boundary, clients=args.clients,
                                         requests=args.requests, warmup=args.warmup)
        server_cpu = server_cpu_s(*pids) - cpu_before
        small_latencies, small_statuses, small_wall = load(port, key, small, boundary, clients=8,
                                                           requests=args.small_requests, warmup=16)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(var_dir, ignore_errors=True)

    ms = [value * 1000 for value in latencies]
    print(f"clients={args.clients} requests={len(ms)} (+{args.warmup} warm-up) log={args.size_mb} MB "
          f"gunicorn gthread workers={args.workers} threads={args.threads} cpus={os.cpu_count()}"
          + (" behind nginx (deploy/nginx.conf)" if args.nginx else ""))
    print(f"statuses={statuses}")
    print(f"p50={percentile(ms, 50):.0f} ms  p90={percentile(ms, 90):.0f} ms  p99={percentile(ms, 99):.0f} ms  "
          f"max={ms[-1]:.0f} ms  mean={statistics.mean(ms):.0f} ms  "
          f"throughput={(args.requests + args.warmup) / wall:.1f} req/s "
          f"({(args.requests + args.warmup) * len(body) / wall / 1e6:.0f} MB/s)")
    print(f"server CPU per {args.size_mb} MB submit: {server_cpu / (args.requests + args.warmup) * 1000:.0f} ms "
          f"({'nginx + ' if args.nginx else ''}gunicorn master + workers, user + system); load average before the run: {load_before:.1f} "
          f"on {os.cpu_count()} CPUs shared with whatever else runs")
    print("goal p99 < 1000 ms (5 MB, 16 clients):", "met" if percentile(ms, 99) < 1000 else "NOT met")
    small_ms = [value * 1000 for value in small_latencies]
    print(f"small logs: 8 clients, {len(small_ms)} submits, statuses={small_statuses}, "
          f"throughput={(args.small_requests + 16) / small_wall:.0f} req/s, p50={percentile(small_ms, 50):.0f} ms, "
          f"p99={percentile(small_ms, 99):.0f} ms")
    ok = statuses.get(202, 0) == args.requests + args.warmup and small_statuses.get(202, 0) == args.small_requests + 16
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=160)
    parser.add_argument("--warmup", type=int, default=16)
    parser.add_argument("--size-mb", type=int, default=5)
    parser.add_argument("--workers", type=int, default=max(2, min(8, 2 * (os.cpu_count() or 1))))
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--small-requests", type=int, default=200)
    parser.add_argument("--nginx", action="store_true", help="submit through nginx with deploy/nginx.conf")
    parser.add_argument("--redis", action="store_true",
                        help="use TRIAGE_REDIS_URL as broker and cache (default: filesystem broker, local cache)")
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
