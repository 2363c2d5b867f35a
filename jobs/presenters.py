"""Turn the diagnosis JSON (CONTRACT.md) into plain values for templates.

The engine's output is rendered defensively: any key may be missing, null or of
an unexpected type, and nothing here ever marks text as safe.
"""
from __future__ import annotations

import json
import re

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
