#!/usr/bin/env python3
"""triage-submit: send a failed job's logs to Triage. Standard library only (urllib).

    triage-submit --url https://triage.example.com --key "$TRIAGE_API_KEY" \\
        --job-id 981 --attempt 0 --command "torchrun --nproc-per-node 8 train.py" logs/*.log

The key may also come from the TRIAGE_API_KEY environment variable (keeps it out of `ps`),
and the URL from TRIAGE_URL. Retries connection errors, 429 and 5xx with backoff; every
try carries the same Idempotency-Key, so a retry never makes a second incident.
Prints the answer ({"id", "status", "url"}) as JSON; exit 0 on success, 1 on failure, 2 on bad usage.
"""
from __future__ import annotations

import argparse
import json
import mimetypes
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

API_PATH = "/api/v1/incidents/"
CHUNK = 1024 * 1024


def endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url + "/" if url.endswith(API_PATH.rstrip("/")) else url + API_PATH


def build_body(fields: dict, files: list[tuple[str, Path]], boundary: str):
    """Write the multipart body to a temporary file (streamed, so large logs stay out of memory)."""
    body = tempfile.TemporaryFile()
    for name, value in fields.items():
        if value in (None, ""):
            continue
        body.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        body.write(str(value).encode() + b"\r\n")
    for name, path in files:
        filename = path.name.replace('"', "_").replace("\r", "_").replace("\n", "_")
        content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        body.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n".encode()
        )
        with open(path, "rb") as handle:
            shutil.copyfileobj(handle, body, CHUNK)
        body.write(b"\r\n")
    body.write(f"--{boundary}--\r\n".encode())
    size = body.tell()
    return body, size


def submit(url: str, key: str, fields: dict, files: list[tuple[str, Path]], *, idempotency_key: str,
           retries: int = 4, timeout: float = 60.0, log=sys.stderr) -> tuple[int, dict]:
    boundary = "triage-" + uuid.uuid4().hex
    body, size = build_body(fields, files, boundary)
    headers = {
        "Authorization": f"Token {key}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(size),
        "Idempotency-Key": idempotency_key,
        "Accept": "application/json",
        "User-Agent": "triage-submit/1.0",
    }
    try:
        for attempt in range(retries + 1):
            body.seek(0)
            request = urllib.request.Request(endpoint(url), data=body, headers=headers, method="POST")
            wait = min(2 ** attempt, 30)
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return response.status, json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as error:
                answer = _json(error.read())
                if error.code != 429 and error.code < 500:
                    return error.code, answer
                wait = int(error.headers.get("Retry-After") or wait) if error.code == 429 else wait
                problem = f"HTTP {error.code}"
            except (urllib.error.URLError, TimeoutError, OSError) as error:
                problem, answer = f"{type(error).__name__}: {getattr(error, 'reason', error)}", {}
            if attempt == retries:
                return 0, answer or {"error": {"code": "unreachable", "message": problem, "field": None}}
            print(f"triage-submit: {problem}; retrying in {wait}s", file=log)
            time.sleep(wait)
    finally:
        body.close()
    raise AssertionError("unreachable")


def _json(raw: bytes) -> dict:
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": {"code": "bad_response", "message": raw[:200].decode(errors="replace"), "field": None}}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="triage-submit", description="Send a failed job's logs to Triage.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="logs: plain, .gz, .zip or .tar.gz")
    parser.add_argument("--url", default=os.environ.get("TRIAGE_URL"), help="Triage base URL (or TRIAGE_URL)")
    parser.add_argument("--key", default=os.environ.get("TRIAGE_API_KEY"), help="API key (or TRIAGE_API_KEY)")
    parser.add_argument("--job-id", default="")
    parser.add_argument("--attempt", default="", help="restart count; with --job-id makes retries idempotent")
    parser.add_argument("--command", default="", help="the job's launch command")
    parser.add_argument("--command-file", type=Path, help="read the launch command from a file")
    parser.add_argument("--config", type=Path, help="DeepSpeed / accelerate / training-args file")
    parser.add_argument("--data", type=Path, help="a sample of the training data (JSON/JSONL)")
    parser.add_argument("--title", default="")
    parser.add_argument("--scheduler", default="")
    parser.add_argument("--cluster", default="")
    parser.add_argument("--callback-url", default="", help="receives the signed verdict when it is ready")
    parser.add_argument("--idempotency-key", default="", help="default: derived from job id and attempt, or random")
    parser.add_argument("--retries", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if not args.url or not args.key:
        parser.error("--url and --key (or TRIAGE_URL and TRIAGE_API_KEY) are required")
    return parser, args


def main(argv=None) -> int:
    parser, args = parse_args(argv)
    paths = [Path(name) for name in args.files]
    for path in paths + [p for p in (args.config, args.data, args.command_file) if p]:
        if not path.is_file():
            print(f"triage-submit: {path}: no such file", file=sys.stderr)
            return 2
    command = args.command_file.read_text(errors="replace") if args.command_file else args.command
    fields = {"command": command, "job_id": args.job_id, "attempt": args.attempt, "title": args.title,
              "scheduler": args.scheduler, "cluster": args.cluster, "callback_url": args.callback_url}
    files = [("files", path) for path in paths]
    files += [("config", args.config)] if args.config else []
    files += [("data", args.data)] if args.data else []
    key = args.idempotency_key or (
        f"job:{args.job_id}:attempt:{args.attempt}" if args.job_id and args.attempt else uuid.uuid4().hex
    )
    status, answer = submit(args.url, args.key, fields, files, idempotency_key=key,
                            retries=args.retries, timeout=args.timeout)
    print(json.dumps(answer))
    return 0 if status == 202 else 1


if __name__ == "__main__":
    sys.exit(main())
