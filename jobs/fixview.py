"""What the incident page shows of the fixes and the memory estimate.

A fix's corrected command is shown as the engine built and checked it: its environment variables are
already inside it (right before each command, or as the script's own `export` lines), so nothing is
prefixed again and the Copy button copies exactly one runnable script. The environment block appears
only for a fix without a command. The diff is the engine's unified diff of the two texts, line by line.
"""
from __future__ import annotations

import json

from jobs.memorychart import show_memory
from jobs.presenters import as_dict, as_list, text
from triage.commandline import unified_diff


def _change_rows(changes) -> list[dict]:
    rows = []
    if isinstance(changes, dict):
        changes = [{"key": key, "value": value} for key, value in changes.items()]
    for change in as_list(changes):
        if isinstance(change, dict):
            rows.append({
                "where": text(change.get("where")),
                "file": text(change.get("file") or change.get("path") or change.get("target")),
                "key": text(change.get("key") or change.get("setting") or change.get("flag") or change.get("env")),
                "old": text(change.get("old", change.get("from"))),
                "new": text(change.get("new", change.get("to", change.get("value")))),
                "hint": text(change.get("hint")),
                "nodes": change.get("nodes") if isinstance(change.get("nodes"), int) else None,
                "raw": "" if any(k in change for k in ("key", "setting", "flag", "env")) else text(change),
            })
        else:
            rows.append({"file": "", "key": "", "old": "", "new": "", "raw": text(change)})
    return rows


def _config_text(config) -> str:
    if not config:
        return ""
    if isinstance(config, str):
        return config
    return json.dumps(config, indent=2, ensure_ascii=False, default=str)


def diff_lines(diff) -> list[dict]:
    """The unified diff as lines with their kind: 'added', 'removed', 'hunk', 'header' or 'same'."""
    out = []
    for line in text(diff).splitlines():
        if line.startswith(("--- ", "+++ ")):
            kind = "header"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "added"
        elif line.startswith("-"):
            kind = "removed"
        else:
            kind = "same"
        out.append({"kind": kind, "text": line})
    return out


def fixes(data: dict, original_command: str) -> list[dict]:
    shown = []
    for index, fix in enumerate(as_list(data.get("fixes"))):
        if not isinstance(fix, dict):
            continue
        command = text(fix.get("command"))
        env = as_dict(fix.get("env"))
        diff = fix.get("diff") if isinstance(fix.get("diff"), str) else ""
        if command and not diff and original_command:  # a document from before the engine stored diffs
            diff = unified_diff(original_command, command)
        # env already inside the command is not repeated; older documents kept it beside the command
        missing_env = [(text(k), text(v)) for k, v in env.items() if f"{text(k)}=" not in command]
        check = as_dict(fix.get("check"))
        shown.append({
            "index": index,
            "kind": text(fix.get("kind")) or "fix",
            "also_kinds": [text(k) for k in as_list(fix.get("also_kinds")) if text(k)],
            "title": text(fix.get("title")),
            "why": text(fix.get("why")),
            "rank_reason": text(fix.get("rank_reason")),
            "ruled_out": text(fix.get("ruled_out")),
            "command": command,
            "command_changed": bool(command) and command.strip() != (original_command or "").strip(),
            "diff_lines": diff_lines(diff) if command else [],
            "checked": check.get("passed") is True,
            "env": missing_env,
            "changes": _change_rows(fix.get("changes")),
            # Steps to run before the corrected command (e.g. the data converter).
            "shell": [text(line) for line in as_list(fix.get("shell")) if text(line)],
            "notes": [text(note) for note in as_list(fix.get("notes")) if text(note)],
            "config": _config_text(fix.get("config")),
            "applicable": fix.get("applicable") is not False,
            "verified": fix.get("verified") if isinstance(fix.get("verified"), bool) else None,
        })
    return shown


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def estimate(data: dict) -> dict | None:
    """The estimate table, only where memory matters (a memory incident, or memory readings in the logs)."""
    est = as_dict(as_dict(data.get("memory")).get("estimate"))
    if not est or not show_memory(data):
        return None
    spread = est.get("range_gib") if isinstance(est.get("range_gib"), list) and len(est["range_gib"]) == 2 else None
    reconciliation = as_dict(est.get("reconciliation"))
    return {
        "components": [(text(k), v) for k, v in as_dict(est.get("components_gib")).items() if _number(v) is not None],
        "total_gib": _number(est.get("total_gib")),
        "range_gib": [_number(v) for v in spread] if spread else None,
        "capacity_gib": _number(est.get("capacity_gib")),
        "fits": est.get("fits") if isinstance(est.get("fits"), bool) else None,
        "attention": text(est.get("attention")),
        "attention_reason": text(est.get("attention_reason")),
        "unknown_inputs": [{"input": text(u.get("input")), "range": " .. ".join(text(x) for x in as_list(u.get("range")))}
                           for u in as_list(est.get("unknown_inputs")) if isinstance(u, dict)],
        "reconciliation": text(reconciliation.get("text")),
        "assumptions": [text(a) for a in as_list(est.get("assumptions")) if text(a)],
        "after_fixes": [
            {"kind": text(a.get("kind")), "total_gib": a.get("total_gib"),
             "range_gib": a.get("range_gib") if isinstance(a.get("range_gib"), list) else None,
             "fits": a.get("fits") if isinstance(a.get("fits"), bool) else None}
            for a in as_list(est.get("after_fixes"))
            if isinstance(a, dict) and _number(a.get("total_gib")) is not None
        ],
    }
