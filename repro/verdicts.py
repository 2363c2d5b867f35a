"""Read a repro run's own log with the engine and compare it with the incident's diagnosis."""
from __future__ import annotations

import tempfile
from pathlib import Path

import triage

# Failures that mean the same thing at tiny scale: a memory cap hit on CPU stands for the job's OOM.
MEMORY = {"gpu_oom", "host_oom"}


def read_log(log: str, command: str | None = None) -> dict:
    """The engine's verdict on a repro log: category, exception, message, summary, rule."""
    with tempfile.TemporaryDirectory(prefix="triage-repro-verdict-") as folder:
        path = Path(folder) / "repro.log"
        path.write_text(log, encoding="utf-8")
        try:
            result = triage.diagnose([str(path)], command=command or None, names={str(path): "repro.log"})
        except triage.UnusableInput as exc:
            return {"category": "unknown", "exception": None, "message": None, "summary": str(exc)}
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    root = data.get("root_cause") or {}
    return {"category": data.get("category") or "unknown", "exception": root.get("exception"),
            "message": (root.get("message") or "")[:300], "summary": (data.get("summary") or "")[:500],
            "rule_id": data.get("rule_id"), "failing_rank": data.get("failing_rank")}


def same_failure(incident: dict, repro: dict, *, memory_ok: bool = False) -> bool:
    """Same category, and the same exception type when both name one."""
    wanted, got = incident.get("category"), repro.get("category")
    if memory_ok and wanted in MEMORY and got in MEMORY:
        return True
    if wanted != got or wanted in (None, "unknown"):
        return False
    want_exc = (incident.get("root_cause") or {}).get("exception") if "root_cause" in incident else incident.get("exception")
    got_exc = repro.get("exception")
    return not (want_exc and got_exc and want_exc.split(".")[-1] != got_exc.split(".")[-1])
