"""The one change to make, for the verdict card: the first fix that applies, with one text to copy.

Works on the fix dicts the fixes presenter gives the page (title, kind, command, shell, env as
(name, value) pairs, changes as rows, applicable); keys it does not find count as empty.
"""
from __future__ import annotations

import shlex


def _env_prefix(fix: dict, command: str) -> str:
    """Variables the command does not already set, as a prefix: never written twice."""
    pairs = fix.get("env") or []
    if isinstance(pairs, dict):
        pairs = list(pairs.items())
    missing = [(str(name), str(value)) for name, value in pairs if f"{name}=" not in command]
    return " ".join(f"{name}={shlex.quote(value)}" for name, value in missing)


def _change_line(row: dict) -> str:
    where = row.get("key") or row.get("file") or ""
    return f"{where}: {row.get('new', '')}" if where else str(row.get("raw") or "")


def top_fix(fixes: list[dict]) -> dict | None:
    for fix in fixes or []:
        if fix.get("applicable") is False:
            continue
        command = str(fix.get("command") or "")
        shell = [str(line) for line in fix.get("shell") or [] if line]
        if command:
            prefix = _env_prefix(fix, command)
            copy, label = (f"{prefix} {command}" if prefix else command), "Command"
            if shell:  # e.g. the data converter: it must run before the corrected command
                copy, label = "\n".join([*shell, copy]), "Run, then launch"
        elif shell:
            copy, label = "\n".join(shell), "Run"
        elif fix.get("env"):
            copy, label = _env_prefix(fix, ""), "Environment"
        elif fix.get("changes"):
            copy, label = "\n".join(_change_line(row) for row in fix["changes"] if isinstance(row, dict)), "Change"
        else:
            copy, label = "", ""
        return {"title": fix.get("title") or fix.get("kind") or "fix", "kind": fix.get("kind") or "fix",
                "why": fix.get("why") or "", "copy": copy, "copy_label": label, "index": fix.get("index")}
    return None
