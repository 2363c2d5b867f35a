"""Convert chat fine-tuning data between the formats training scripts expect, and repair files.

Formats: alpaca   {"instruction", "input", "output", "system"?, "history"?: [[q, a], ...]}
         sharegpt {"conversations": [{"from": "system"|"human"|"gpt", "value"}]}
         messages {"messages": [{"role": "system"|"user"|"assistant", "content"}]}  (OpenAI / TRL)
         text     {"text"}
Input: a JSON array, {"data": [...]}, or JSON Lines. Output: JSON Lines when OUT ends in .jsonl.

    python -m triage convert-data --to sharegpt IN OUT     (hook: register(subparsers))
    python -m triage.fixes.convert_data --to sharegpt IN OUT
    python -m triage convert-data --repair IN OUT          (drop rows that do not parse)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FORMATS = ("sharegpt", "messages", "alpaca", "text")
_ROLE = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "bot": "assistant",
         "model": "assistant", "chatgpt": "assistant", "system": "system"}
_SHAREGPT_ROLE = {"user": "human", "assistant": "gpt", "system": "system"}


def detect_format(record) -> str | None:
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("conversations"), list):
        return "sharegpt"
    if isinstance(record.get("messages"), list):
        return "messages"
    if "instruction" in record and ("output" in record or "response" in record):
        return "alpaca"
    if ("prompt" in record and ("completion" in record or "response" in record)) or \
            ("question" in record and "answer" in record):
        return "alpaca"
    if "text" in record:
        return "text"
    return None


def to_turns(record: dict) -> list[tuple[str, str]] | None:
    """The record as [(role, content)], roles system/user/assistant; None when unknown."""
    kind = detect_format(record)
    if kind == "sharegpt":
        turns = [(_ROLE.get(str(t.get("from", "")).lower(), "user"), str(t.get("value", "")))
                 for t in record["conversations"] if isinstance(t, dict)]
    elif kind == "messages":
        turns = [(_ROLE.get(str(t.get("role", "")).lower(), "user"), str(t.get("content", "")))
                 for t in record["messages"] if isinstance(t, dict)]
    elif kind == "alpaca":
        turns = [("system", str(record["system"]))] if record.get("system") else []
        for pair in record.get("history") or []:
            if isinstance(pair, list | tuple) and len(pair) == 2:
                turns += [("user", str(pair[0])), ("assistant", str(pair[1]))]
        prompt = record.get("instruction", record.get("prompt", record.get("question", "")))
        extra = record.get("input") or ""
        answer = record.get("output", record.get("completion", record.get("response", record.get("answer", ""))))
        turns += [("user", f"{prompt}\n\n{extra}" if extra else str(prompt)), ("assistant", str(answer))]
    elif kind == "text":
        turns = [("user", ""), ("assistant", str(record["text"]))]
    else:
        return None
    return turns


def from_turns(turns: list[tuple[str, str]], to: str) -> dict:
    if to == "sharegpt":
        return {"conversations": [{"from": _SHAREGPT_ROLE[r], "value": c} for r, c in turns]}
    if to == "messages":
        return {"messages": [{"role": r, "content": c} for r, c in turns]}
    if to == "text":
        return {"text": "\n\n".join(c for _, c in turns if c)}
    system = next((c for r, c in turns if r == "system"), None)
    pairs = [(c, turns[i + 1][1]) for i, (r, c) in enumerate(turns[:-1]) if r == "user" and turns[i + 1][0] == "assistant"]
    last = pairs[-1] if pairs else ("", "")
    out = {"instruction": last[0], "input": "", "output": last[1]}
    if len(pairs) > 1:
        out["history"] = [list(p) for p in pairs[:-1]]
    if system:
        out["system"] = system
    return out


def convert_record(record, to: str) -> dict | None:
    turns = to_turns(record) if isinstance(record, dict) else None
    return None if turns is None else from_turns(turns, to)


def convert_records(records: list, to: str) -> tuple[list[dict], int]:
    """(converted records, number skipped because their format was not recognised)."""
    out, skipped = [], 0
    for record in records:
        converted = convert_record(record, to)
        if converted is None:
            skipped += 1
        else:
            out.append(converted)
    return out, skipped


def load_records(path: str | Path) -> list:
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict):
        data = data.get("data") or data.get("train") or [data]
    return data if isinstance(data, list) else [data]


def repair_records(path: str | Path) -> tuple[list, int]:
    """(rows that parse, rows dropped): reads JSON Lines, or a JSON array whose elements are one a line."""
    raw = Path(path).read_bytes().decode("utf-8", errors="replace")
    try:
        data = json.loads(raw)
        return (data if isinstance(data, list) else [data]), 0
    except json.JSONDecodeError:
        pass
    good, dropped = [], 0
    for line in raw.splitlines():
        line = line.strip().rstrip(",")
        if not line or line in ("[", "]"):
            continue
        try:
            good.append(json.loads(line))
        except json.JSONDecodeError:
            dropped += 1
    return good, dropped


def write_records(records: list, path: str | Path) -> None:
    path = Path(path)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--to", choices=FORMATS, help="target format")
    action.add_argument("--repair", action="store_true", help="drop rows that do not parse")
    parser.add_argument("input")
    parser.add_argument("output")
    parser.set_defaults(handler=run)
    return parser


def register(subparsers) -> argparse.ArgumentParser:
    """Hook for the engine's CLI: register(subparsers) adds `convert-data`; call args.handler(args)."""
    return add_arguments(subparsers.add_parser("convert-data", help="convert or repair a training data file"))


def run(args: argparse.Namespace) -> int:
    try:
        if args.repair:
            records, dropped = repair_records(args.input)
            write_records(records, args.output)
            print(f"kept {len(records)} rows, dropped {dropped}", file=sys.stderr)
            return 0
        records, skipped = convert_records(load_records(args.input), args.to)
    except (OSError, ValueError) as exc:
        print(f"convert-data: {exc}", file=sys.stderr)
        return 2
    write_records(records, args.output)
    print(f"wrote {len(records)} rows as {args.to}, skipped {skipped}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = add_arguments(argparse.ArgumentParser(prog="convert-data")).parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
