"""Turn the diagnosis JSON (CONTRACT.md) into plain values for templates.

The engine's output is rendered defensively: any key may be missing, null or of
an unexpected type, and nothing here ever marks text as safe.
"""
from __future__ import annotations

import json
import re

from jobs import logfiles
from triage.ranks import LINE_RANK, rank_in_line

MAX_EVIDENCE = 12
RANK_IN_LINE = LINE_RANK  # the engine's one rank-prefix grammar
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


CATEGORY_PHRASES = {
    "gpu_oom": "ran out of GPU memory",
    "host_oom": "was killed when the host ran out of memory",
    "dataloader_worker": "lost a DataLoader worker",
    "nccl_timeout": "stopped joining collectives",
    "nccl_error": "hit a communication (NCCL) error",
    "rendezvous": "could not join the job (rendezvous failed)",
    "data_schema": "found training rows in a format the script does not expect",
    "data_corrupt": "could not read a data file",
    "data_pipeline": "failed while preparing the training data",
    "version_mismatch": "hit a library version mismatch",
    "config_invalid": "was given settings that contradict each other",
    "cuda_error": "hit a CUDA error",
    "hardware": "hit a GPU or node fault",
    "storage": "failed on disk or checkpoint I/O",
    "model_load": "could not load the model or tokenizer",
    "numerical": "diverged (the loss became NaN or inf)",
    "code_bug": "hit a bug in the training script",
}
# Categories whose exception text is the clearest part of the story: shown in brackets.
NAME_THE_EXCEPTION = {"data_schema", "data_corrupt", "data_pipeline", "version_mismatch", "config_invalid",
                      "model_load", "code_bug", "cuda_error", "storage", "unknown"}
# (where, phrase), innermost frame first: the first frame that matches names the phase.
PHASES = (
    (re.compile(r"/optim/|optimizer|zero_grad|\bstep$"), "in the optimizer step"),
    (re.compile(r"backward|autograd"), "in the backward pass"),
    (re.compile(r"dataloader|collate|__getitem__|datasets/|_fetch"), "while loading training data"),
    (re.compile(r"save_pretrained|save_checkpoint|_save|torch/serialization|sav(?:e|ing) (?:a )?checkpoint"),
     "while saving a checkpoint"),
    (re.compile(r"from_pretrained|load_state_dict|modeling_utils"), "while loading the model"),
    (re.compile(r"forward|_call_impl"), "in the forward pass"),
)
TIMEOUT_TEXT = re.compile(r"time[d ]?\s?out|watchdog|timeout", re.IGNORECASE)


def _phase(frames: list) -> str:
    for frame in reversed(frames):
        where = f"{text(frame.get('file'))} {text(frame.get('function'))}".lower()
        for pattern, phrase in PHASES:
            if pattern.search(where):
                return phrase
    return ""


def _last_words(data: dict, failing_rank: int) -> str:
    """Without a stack, the phase the failing rank's last log line names ('saving checkpoint ...')."""
    for rank in as_list(data.get("ranks")):
        if isinstance(rank, dict) and as_int(rank.get("rank")) == failing_rank:
            texts = [text(e.get("text")).lower() for e in as_list(rank.get("events"))
                     if isinstance(e, dict) and text(e.get("kind")) not in ("exit", "sigterm", "signal")]
            for line in reversed(texts[-3:]):
                for pattern, phrase in PHASES:
                    if pattern.search(line):
                        return phrase
    return ""


def _short_exception(exception: str, message: str, limit: int = 70) -> str:
    name = exception.rsplit(".", 1)[-1]
    message = " ".join(message.split())
    if len(message) > limit:
        message = message[: limit - 1].rstrip() + "…"
    return f"{name} {message}".strip() if message else name


def _aftermath(data: dict, failing_rank) -> str:
    """'63 ranks then timed out waiting for it' from the other ranks' statuses and events."""
    timed_out = stopped = 0
    for rank in as_list(data.get("ranks")):
        if not isinstance(rank, dict) or as_int(rank.get("rank")) == failing_rank:
            continue
        events = [e for e in as_list(rank.get("events")) if isinstance(e, dict)]
        if any(TIMEOUT_TEXT.search(text(e.get("text"))) for e in events if text(e.get("kind")) != "progress"):
            timed_out += 1
        elif text(rank.get("status")) in ("terminated", "cascade", "failed") or any(
                text(e.get("kind")) in ("sigterm", "signal") for e in events):
            stopped += 1
    def ranks(count: int) -> str:
        return f"{count} rank{'s' if count != 1 else ''}"

    if timed_out and stopped:
        return f"{ranks(timed_out)} then timed out waiting for it and {stopped} more were stopped"
    if timed_out:
        return f"{ranks(timed_out)} then timed out waiting for it"
    if stopped:
        return "the launcher then stopped the other rank" if stopped == 1 else \
            f"the launcher then stopped the other {ranks(stopped)}"
    return ""


def headline(data: dict) -> str:
    """One sentence a tired reader takes in at once: who failed, how, where, and what followed."""
    root = as_dict(data.get("root_cause"))
    category = text(data.get("category")) or "unknown"
    failing_rank = as_int(data.get("failing_rank"))
    exception, message = text(root.get("exception")), text(root.get("message"))
    who = f"Rank {failing_rank}" if failing_rank is not None else "The job"
    what = CATEGORY_PHRASES.get(category, "failed")
    if category in NAME_THE_EXCEPTION and exception:
        what = f"{what} ({_short_exception(exception, message)})" if category in CATEGORY_PHRASES else \
            f"failed with {_short_exception(exception, message)}"
    where = _phase([f for f in as_list(root.get("frames")) if isinstance(f, dict)])
    if not where and failing_rank is not None:
        where = _last_words(data, failing_rank)
    sentence = " ".join(part for part in (who, what, where) if part)
    after = _aftermath(data, failing_rank) if failing_rank is not None else ""
    return f"{sentence}; {after}." if after else f"{sentence}."


def explanation(summary: str, exception: str, message: str) -> str:
    """The engine summary's reasoning, without the 'Rank N raised X ...' the headline already says."""
    reason = _reasoning(summary.strip(), exception)
    return reason if len(reason) >= 40 else ""  # "The GPU ran out of memory." adds nothing to the headline


def _reasoning(summary: str, exception: str) -> str:
    if not summary:
        return ""
    for separator in (" - ", ": ", "; "):
        head, found, tail = summary.partition(separator)
        if found and (exception and exception.rsplit(".", 1)[-1] in head or head.lower().startswith("rank")):
            tail = tail.strip()
            return (tail[:1].upper() + tail[1:]) if tail else ""
    return "" if summary.lower().startswith("rank") and exception and exception in summary else summary


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
        launcher_note = reason.strip()[:1].upper() + reason.strip()[1:]
    elif isinstance(wrong, str) and wrong.strip():
        launcher_note = wrong
    elif wrong:
        launcher_note = "The launcher's \"Root Cause\" block points at the wrong failure."
        if launcher_rank is not None and failing_rank is not None:
            launcher_note = (
                f"The launcher's \"Root Cause\" block names rank {launcher_rank}, but rank {failing_rank} "
                f"failed first; rank {launcher_rank} only went down after it (terminated or timed out)."
            )
    exception, message = text(root.get("exception")), text(root.get("message"))
    return {
        "headline": headline(data),
        "explanation": explanation(text(data.get("summary")), exception, message),
        "category": text(data.get("category")) or incident.category or "unknown",
        "exception": exception,
        "message": message,
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


FRAME_LINE = re.compile(r'^\s*File "[^"]+", line \d+')


def _same_text(line: str) -> str:
    """A line without its rank prefix and numbers: 64 ranks' identical timeouts read as one."""
    return re.sub(r"\d+", "#", RANK_IN_LINE.sub("", line)).strip()


def evidence(data: dict, artifacts, *, with_context: bool = True) -> list[dict]:
    """The lines that decided the verdict, from the right file, once each, with context read from the log.

    The failing rank's lines come first and a stack-frame line never leads when an exception line
    exists; a line inside an earlier line's context window is highlighted there instead of shown
    again; repeated texts (the same timeout from many ranks) are shown once with a count.
    """
    root = as_dict(data.get("root_cause"))
    failing_rank = as_int(data.get("failing_rank"))
    # The engine's top-level "evidence" holds every supporting line (root first); fall back to the root's.
    entries = [e for e in as_list(data.get("evidence")) or as_list(root.get("evidence")) if isinstance(e, dict)]
    rows = []
    for order, entry in enumerate(entries):
        source, line = text(entry.get("source")), as_int(entry.get("line"))
        line_text = text(entry.get("text"))
        prefix = RANK_IN_LINE.search(line_text)
        rank = as_int(entry.get("rank"))
        if rank is None and prefix:
            rank = rank_in_line(line_text)
        if rank is None and order == 0:  # the engine lists the root line first: the failing rank's
            rank = failing_rank
        rows.append({"source": source, "line": line, "text": line_text, "rank": rank, "order": order,
                     "combined": bool(prefix), "frame": bool(FRAME_LINE.match(RANK_IN_LINE.sub("", line_text)))})
    root_source = text(as_dict((as_list(root.get("evidence")) or [{}])[0]).get("source"))
    rows.sort(key=lambda r: (not (r["rank"] == failing_rank or (r["rank"] is None and r["source"] == root_source)),
                             r["frame"], r["order"]))
    items, seen_text = [], {}
    for row in rows:
        if len(items) >= MAX_EVIDENCE:
            break
        near = next((item for item in items if item["source"] == row["source"] and item["line"] and row["line"]
                     and abs(item["line"] - row["line"]) <= CONTEXT_RADIUS), None)
        if near is not None:
            near["hits"].add(row["line"])
            continue
        key = _same_text(row["text"])
        if key and key in seen_text:
            seen_text[key]["repeats"] += 1
            continue
        artifact, member = logfiles.find_artifact(artifacts, row["source"])
        item = {**row, "artifact": artifact, "member": member, "context": None, "hits": {row["line"]},
                "repeats": 0, "rank_link": row["combined"] and row["rank"] is not None}
        seen_text[key] = item
        items.append(item)
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
                # The stored line may carry the rank prefix the engine stripped: then the file is a
                # combined log and "this rank's lines only" finds the line.
                own = next((line for number, line in item["context"] or [] if number == item["line"]), "")
                prefix = RANK_IN_LINE.search(own)
                if prefix:
                    item["rank_link"] = True
                    if item["rank"] is None:
                        item["rank"] = rank_in_line(own)
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
