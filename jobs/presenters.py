"""Turn the diagnosis JSON (CONTRACT.md) into plain values for templates.

The engine's output is rendered defensively: any key may be missing, null or of
an unexpected type, and nothing here ever marks text as safe.
"""
from __future__ import annotations

import difflib
import json
import re
import shlex

from jobs import logfiles

MAX_EVIDENCE = 12
RANK_IN_LINE = re.compile(r"\[(?:rank|default)(\d+)\]|^(\d+): ")
CONTEXT_RADIUS = 3
RAW_JSON_MAX_CHARS = 300_000


def as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def as_int(value):
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def rank_ranges(ranks) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    numbers = sorted({r for r in ranks if isinstance(r, int)})
    parts, begin = [], None
    for index, number in enumerate(numbers):
        if begin is None:
            begin = number
        if index + 1 == len(numbers) or numbers[index + 1] != number + 1:
            parts.append(str(begin) if begin == number else f"{begin}-{number}")
            begin = None
    return ", ".join(parts)


def verdict(data: dict, incident) -> dict:
    root = as_dict(data.get("root_cause"))
    confidence = data.get("confidence")
    try:
        confidence_pct = round(float(confidence) * 100)
    except (TypeError, ValueError):
        confidence_pct = None
    failing_rank = as_int(data.get("failing_rank"))
    launcher_rank = as_int(data.get("launcher_root_cause_rank"))
    wrong = data.get("launcher_verdict_wrong")
    reason = data.get("launcher_verdict_reason")
    launcher_note = ""
    if wrong and isinstance(reason, str) and reason.strip():
        launcher_note = reason
    elif isinstance(wrong, str) and wrong.strip():
        launcher_note = wrong
    elif wrong:
        launcher_note = "The launcher's \"Root Cause\" block points at the wrong failure."
        if launcher_rank is not None and failing_rank is not None:
            launcher_note = (
                f"The launcher's \"Root Cause\" block names rank {launcher_rank}, but rank {failing_rank} "
                f"failed first; rank {launcher_rank} only went down after it (terminated or timed out)."
            )
    return {
        "category": text(data.get("category")) or incident.category or "unknown",
        "exception": text(root.get("exception")),
        "message": text(root.get("message")),
        "failing_rank": failing_rank,
        "confidence": confidence_pct,
        "summary": text(data.get("summary")),
        "launcher": text(data.get("launcher")) or incident.launcher,
        "world_size": as_int(data.get("world_size")) or incident.world_size,
        "launcher_rank": launcher_rank,
        "launcher_note": launcher_note,
        "frames": [
            {"file": text(f.get("file")), "line": as_int(f.get("line")), "function": text(f.get("function"))}
            for f in as_list(root.get("frames"))[-6:] if isinstance(f, dict)
        ],
        "fingerprint": text(data.get("fingerprint")),
        "engine_version": text(data.get("engine_version")),
    }


def evidence(data: dict, artifacts, *, with_context: bool = True) -> list[dict]:
    """Evidence lines with a few lines of context read from the stored artifact."""
    root = as_dict(data.get("root_cause"))
    failing_rank = as_int(data.get("failing_rank"))
    # The engine's top-level "evidence" holds every supporting line (root first); fall back to the root's.
    entries = as_list(data.get("evidence")) or as_list(root.get("evidence"))
    items, seen = [], set()
    for entry in entries:
        if len(items) >= MAX_EVIDENCE:
            break
        if not isinstance(entry, dict):
            continue
        source, line = text(entry.get("source")), as_int(entry.get("line"))
        if line is not None and (source, line) in seen:
            continue
        seen.add((source, line))
        line_text = text(entry.get("text"))
        prefix = RANK_IN_LINE.search(line_text)
        artifact, member = logfiles.find_artifact(artifacts, source)
        items.append({
            "source": source, "line": line, "text": line_text,
            "artifact": artifact, "member": member, "context": None,
            "rank": as_int(entry.get("rank")) if entry.get("rank") is not None
            else int(prefix.group(1) or prefix.group(2)) if prefix else (failing_rank if not items else None),
        })
    if with_context:
        # One pass per file for all of its evidence lines, within a byte budget for the whole page.
        by_file: dict = {}
        for item in items:
            if item["artifact"] is not None and item["line"]:
                by_file.setdefault((item["artifact"].pk, item["member"]), []).append(item)
        for group in by_file.values():
            first = group[0]
            windows = logfiles.contexts(first["artifact"], [i["line"] for i in group], member=first["member"],
                                        radius=CONTEXT_RADIUS)
            for item in group:
                item["context"] = windows.get(item["line"])
    return items


def _tokens(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def command_diff(original: str, corrected: str) -> list[dict]:
    """Token diff of two launch commands: [{'op': 'same'|'removed'|'added', 'text'}]."""
    before, after = _tokens(original), _tokens(corrected)
    pieces = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append({"op": "same", "text": " ".join(before[a1:a2])})
            continue
        if a2 > a1:
            pieces.append({"op": "removed", "text": " ".join(before[a1:a2])})
        if b2 > b1:
            pieces.append({"op": "added", "text": " ".join(after[b1:b2])})
    return pieces


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
                "raw": "" if any(k in change for k in ("key", "setting", "flag", "env")) else text(change),
            })
        else:
            rows.append({"file": "", "key": "", "old": "", "new": "", "raw": text(change)})
    return rows


def _config_text(config) -> str:
    """The corrected config file(s), as the text to paste."""
    if not config:
        return ""
    if isinstance(config, str):
        return config
    return json.dumps(config, indent=2, ensure_ascii=False, default=str)


def fixes(data: dict, original_command: str) -> list[dict]:
    shown = []
    for index, fix in enumerate(as_list(data.get("fixes"))):
        if not isinstance(fix, dict):
            continue
        command = text(fix.get("command"))
        env = as_dict(fix.get("env"))
        diff_pieces = command_diff(original_command, command) if command and original_command else []
        diff = fix.get("diff")
        shown.append({
            "index": index,
            "kind": text(fix.get("kind")) or "fix",
            "title": text(fix.get("title")),
            "why": text(fix.get("why")),
            "command": command,
            "command_diff": diff_pieces,
            "command_changed": any(piece["op"] != "same" for piece in diff_pieces),
            "diff_text": diff if isinstance(diff, str) else (text(diff) if diff else ""),
            "env": [(text(k), text(v)) for k, v in env.items()],
            "env_line": " ".join(f"{k}={shlex.quote(text(v))}" for k, v in env.items()),
            "changes": _change_rows(fix.get("changes")),
            # Steps to run before the corrected command (e.g. the data converter), and remarks
            # such as the kept global batch.
            "shell": [text(line) for line in as_list(fix.get("shell")) if text(line)],
            "notes": [text(note) for note in as_list(fix.get("notes")) if text(note)],
            "config": _config_text(fix.get("config")),
            "applicable": fix.get("applicable") is not False,
            "verified": fix.get("verified") if isinstance(fix.get("verified"), bool) else None,
        })
    return shown


def estimate(data: dict) -> dict | None:
    est = as_dict(as_dict(data.get("memory")).get("estimate"))
    if not est:
        return None
    components = [(text(k), v) for k, v in as_dict(est.get("components_gib")).items()
                  if isinstance(v, (int, float))]
    return {
        "components": components,
        "total_gib": est.get("total_gib") if isinstance(est.get("total_gib"), (int, float)) else None,
        "capacity_gib": est.get("capacity_gib") if isinstance(est.get("capacity_gib"), (int, float)) else None,
        "fits": est.get("fits") if isinstance(est.get("fits"), bool) else None,
        "after_fixes": [
            {"kind": text(a.get("kind")), "total_gib": a.get("total_gib"),
             "fits": a.get("fits") if isinstance(a.get("fits"), bool) else None}
            for a in as_list(est.get("after_fixes"))
            if isinstance(a, dict) and isinstance(a.get("total_gib"), (int, float))
        ],
    }


def rank_statuses(data: dict) -> list[dict]:
    """Ranks grouped by (status, exit code) for the one-line 'who died how' summary."""
    groups: dict = {}
    for rank in as_list(data.get("ranks")):
        if not isinstance(rank, dict):
            continue
        key = (text(rank.get("status")) or "unknown", as_int(rank.get("exit_code")))
        groups.setdefault(key, []).append(as_int(rank.get("rank")))
    return [
        {"status": status, "exit_code": exit_code, "ranks": rank_ranges(ranks), "count": len(ranks)}
        for (status, exit_code), ranks in sorted(groups.items(), key=lambda item: min(
            [r for r in item[1] if r is not None] or [0]))
    ]


def raw_json(data) -> tuple[str, bool]:
    """Valid JSON for the 'raw diagnosis' block: one top-level key (and one list item) a line.

    json.dumps(indent=...) runs the pure-Python encoder, too slow for hundreds of ranks; this
    layout keeps the C encoder and stays readable. Cut when huge (the API serves it whole).
    """
    if not isinstance(data, dict):
        return json.dumps(data, default=str), False
    lines = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, list) and value:
            items = ",\n".join("    " + json.dumps(item, default=str) for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, default=str)}")
    dumped = "{\n" + ",\n".join(lines) + "\n}"
    if len(dumped) > RAW_JSON_MAX_CHARS:
        return dumped[:RAW_JSON_MAX_CHARS], True
    return dumped, False
