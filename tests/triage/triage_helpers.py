"""Shared helpers for the engine tests (plain functions, no Django)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def diagnose_text(tmp_path: Path, text: str, command: str | None = None, name: str = "train.log"):
    """The engine's diagnosis of one log file holding ``text``."""
    from triage import diagnose

    return diagnose([write(tmp_path / name, text)], command=command)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def cli_json(*args: str) -> dict:
    proc = run_cli("diagnose", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
