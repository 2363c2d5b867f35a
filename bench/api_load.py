#!/usr/bin/env python3
"""Load benchmark: 16 concurrent clients submitting a 5 MB log to a locally started gunicorn.

    .venv/bin/python bench/api_load.py [--clients 16] [--requests 160] [--size-mb 5] [--workers 4]

Uses a throwaway var folder (SQLite, filesystem broker, media) unless TRIAGE_DATABASE_URL is set;
the diagnosis worker does not run. Prints p50/p90/p99 of the submit round trip (goal: p99 < 300 ms).
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
    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "config.wsgi", "-w", str(args.workers), "-b", f"127.0.0.1:{port}",
         "--timeout", "120", "--log-level", "warning"],
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


def run(args):
    log = make_log(args.size_mb * 1024 * 1024)
    boundary = "bench" + uuid.uuid4().hex
    body = multipart(log, boundary)
    var_dir = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    server, port, key = setup_server(args, var_dir)
    latencies, statuses, lock = [], {}, threading.Lock()
    remaining = iter(range(args.requests + args.warmup))

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
                if n >= args.warmup:
                    latencies.append(elapsed)
        conn.close()

    try:
        started = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(var_dir, ignore_errors=True)

    latencies.sort()
    ms = [value * 1000 for value in latencies]

    def pct(p):
        return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]

    print(f"clients={args.clients} requests={len(ms)} (+{args.warmup} warm-up) log={args.size_mb} MB "
          f"gunicorn workers={args.workers} cpus={os.cpu_count()}")
    print(f"statuses={statuses}")
    print(f"p50={pct(50):.0f} ms  p90={pct(90):.0f} ms  p99={pct(99):.0f} ms  max={ms[-1]:.0f} ms  "
          f"mean={statistics.mean(ms):.0f} ms  throughput={(args.requests + args.warmup) / wall:.1f} req/s "
          f"({(args.requests + args.warmup) * len(body) / wall / 1e6:.0f} MB/s)")
    print("goal p99 < 300 ms:", "met" if pct(99) < 300 else "NOT met")
    return 0 if statuses.get(202, 0) == args.requests + args.warmup else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=160)
    parser.add_argument("--warmup", type=int, default=16)
    parser.add_argument("--size-mb", type=int, default=5)
    parser.add_argument("--workers", type=int, default=max(2, min(8, (os.cpu_count() or 2) * 2)))
    parser.add_argument("--redis", action="store_true",
                        help="use TRIAGE_REDIS_URL as broker and cache (default: filesystem broker, local cache)")
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
