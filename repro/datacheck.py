"""Data check: what layout the sample has, what the failing script reads, which rows break, the fix.

The host only parses JSON here (never executes anything uploaded); the rows are then read inside the
sandbox by repro/runtime/load_check.py, through the same loader the reference script trains with.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from triage.fixes import convert_data

STYLES = ("sharegpt", "messages", "alpaca", "prompt_completion", "text")
CONVERTIBLE = set(convert_data.FORMATS)  # what the shipped converter writes
_KEY_STYLE = {"conversations": "sharegpt", "from": "sharegpt", "value": "sharegpt", "messages": "messages",
              "role": "messages", "content": "messages", "instruction": "alpaca", "output": "alpaca",
              "input": "alpaca", "text": "text", "prompt": "prompt_completion", "completion": "prompt_completion"}


def row_style(row) -> str | None:
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("conversations"), list):
        return "sharegpt"
    if isinstance(row.get("messages"), list):
        return "messages"
    if "instruction" in row and "output" in row:
        return "alpaca"
    if "prompt" in row and "completion" in row:
        return "prompt_completion"
    if "text" in row:
        return "text"
    return None


def dataset_info_style(document) -> dict | None:
    """LLaMA-Factory's dataset_info.json: {name: {"file_name", "formatting": alpaca|sharegpt, ...}}."""
    if not isinstance(document, dict) or not document:
        return None
    entries = {name: spec for name, spec in document.items()
               if isinstance(spec, dict) and ({"file_name", "hf_hub_url", "formatting", "columns"} & set(spec))}
    if not entries or len(entries) != len(document):
        return None
    return {name: {"formatting": spec.get("formatting", "alpaca"), "file_name": spec.get("file_name"),
                   "columns": spec.get("columns") or {}} for name, spec in entries.items()}


def describe(path: Path) -> dict:
    """Styles found in a sample: {"rows", "styles": {style: count}, "dataset_info"?, "error"?}."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {"rows": 0, "styles": {}, "error": f"{type(exc).__name__}: {exc}"}
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    info = dataset_info_style(document)
    if info is not None:
        return {"rows": 0, "styles": {}, "dataset_info": info}
    try:
        records = convert_data.load_records(path)
    except (ValueError, OSError) as exc:
        return {"rows": 0, "styles": {}, "error": f"{type(exc).__name__}: {exc}"}
    styles: dict[str, int] = {}
    for record in records:
        style = row_style(record) or "unknown"
        styles[style] = styles.get(style, 0) + 1
    return {"rows": len(records), "styles": styles}


def expected_style(diagnosis: dict, command: str = "") -> tuple[str | None, str]:
    """(style the failing script reads, how we know)."""
    for fix in diagnosis.get("fixes") or []:
        expected = (fix.get("data_format") or {}).get("expected")
        if expected in STYLES:
            return expected, "the engine's reading of the traceback"
    facts = diagnosis.get("facts") or {}
    missing = facts.get("missing_key")
    if missing in _KEY_STYLE:
        return _KEY_STYLE[missing], f"the script reads the field '{missing}'"
    message = str((diagnosis.get("root_cause") or {}).get("message") or "")
    found = re.search(r"['\"](\w+)['\"]", message)
    if (diagnosis.get("root_cause") or {}).get("exception") == "KeyError" and found and found.group(1) in _KEY_STYLE:
        return _KEY_STYLE[found.group(1)], f"the script reads the field '{found.group(1)}'"
    lowered = command.lower()
    if "--dataset_text_field" in lowered:
        return "text", "the --dataset_text_field flag"
    for word, style in (("sharegpt", "sharegpt"), ("alpaca", "alpaca"), ("messages", "messages")):
        if re.search(rf"\b{word}\b", lowered.replace("_", " ")) and word not in _data_path_words(command):
            return style, f"'{word}' in the launch command"
    return None, "unknown"


def _data_path_words(command: str) -> str:
    found = re.search(r"--(?:data_path|train_file|dataset)[= ](\S+)", command)
    return found.group(1).lower() if found else ""


def convert(path: Path, to: str, out_dir: Path) -> tuple[Path, int, int]:
    """Convert with the shipped converter (triage.fixes.convert_data); (file, rows written, skipped)."""
    records = convert_data.load_records(path)
    converted, skipped = convert_data.convert_records(records, to)
    target = out_dir / f"{Path(path).stem}.{to}.json"
    convert_data.write_records(converted, target)
    return target, len(converted), skipped


def repair(path: Path, out_dir: Path) -> tuple[Path, int, int]:
    records, dropped = convert_data.repair_records(path)
    target = out_dir / f"{Path(path).stem}.repaired.jsonl"
    convert_data.write_records(records, target)
    return target, len(records), dropped


def parse_rowcheck(log: str) -> dict:
    for line in log.splitlines():
        if line.startswith("ROWCHECK "):
            try:
                return json.loads(line[len("ROWCHECK "):])
            except json.JSONDecodeError:
                return {}
    return {}
