"""Data fixes: convert the dataset to the expected format, or repair an unreadable file."""
from __future__ import annotations

import re

from .common import Edits, evidence_text
from .convert_data import FORMATS, convert_record, detect_format

DATA_KEYS = ("data_path", "train_file", "train_data", "train_path", "dataset_path", "data_file",
             "train_dataset", "dataset", "data")
_EXPECTS = {"conversations": "sharegpt", "from": "sharegpt", "value": "sharegpt", "messages": "messages",
            "role": "messages", "content": "messages", "instruction": "alpaca", "output": "alpaca",
            "input": "alpaca", "text": "text"}


def expected_format(ctx) -> str | None:
    if ctx.facts.get("expected_format") in FORMATS:
        return ctx.facts["expected_format"]
    text = evidence_text(ctx)
    missing = re.search(r"KeyError: ['\"](\w+)['\"]|^['\"](\w+)['\"]$|missing (?:column|field|key) ['\"]?(\w+)",
                        text.strip())
    if missing:
        return _EXPECTS.get(next(g for g in missing.groups() if g))
    lowered = text.lower()
    for word in ("sharegpt", "conversations", "messages", "alpaca"):
        if word in lowered:
            return _EXPECTS.get(word, word)
    return None


def _records(sample) -> list:
    if isinstance(sample, list):
        return sample
    if isinstance(sample, dict):
        return sample.get("data") if isinstance(sample.get("data"), list) else [sample]
    return []


def _data_flag(cmd):
    for key in DATA_KEYS:
        flag = cmd.flag(key)
        if flag is not None and flag.value and re.search(r"\.jsonl?$", flag.value):
            return flag
    return None


def _out_path(path: str, fmt: str) -> str:
    stem, dot, ext = path.rpartition(".")
    return f"{stem}.{fmt}.{ext}" if dot else f"{path}.{fmt}.json"


def convert_data_format(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    records = _records(ctx.data_sample)
    current = next((f for f in map(detect_format, records) if f), None)
    target = expected_format(ctx) or ("sharegpt" if current != "sharegpt" else "messages")
    flag = _data_flag(edits.cmd)
    source = flag.value if flag else "DATA.json"
    out = _out_path(source, target)
    if flag is not None:
        edits.rw.set_flag((flag.key,), out)
    notes = [f"the data is {current or 'in an unrecognised format'}; the script expects {target}"]
    if flag is None:
        notes.append("replace DATA.json with the training file, then point the data flag at the converted file")
    if edits.cmd.flag("dataset") is not None and flag is None:
        notes.append(f"LLaMA-Factory: register the converted file in data/dataset_info.json with "
                     f"\"formatting\": \"{'sharegpt' if target in ('sharegpt', 'messages') else 'alpaca'}\"")
    preview = convert_record(records[0], target) if records else None
    extra = {"shell": [f"python -m triage convert-data --to {target} {source} {out}"],
             "data_format": {"found": current, "expected": target}}
    if preview is not None:
        extra["preview"] = preview
    return edits.fix(
        kind, f"Convert the data from {current or 'its format'} to {target}",
        f"The training script reads {target}-style fields, but the samples carry "
        f"{current or 'other'} fields, so the first sample that is read raises.",
        notes=notes, cost="low", **extra,
    )


def fix_data_file(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    text = evidence_text(ctx)
    if ctx.category == "numerical" and ctx.rule_id == "numerical.ctc_infinite":
        return edits.fix(
            kind, "Drop the rows whose transcript is longer than their frames",
            "CTC needs at least one input frame per output label (more where a label repeats); a row whose "
            "transcript is longer than its frames after downsampling has no alignment, so its loss is infinite.",
            notes=["compare each row's transcript length with its frame count divided by the model's downsampling; "
                   "drop the rows over it (or fix transcripts glued from several utterances)",
                   "zero_infinity=True in the CTC loss skips such rows instead of failing, but hides them"],
            cost="low",
        )
    if ctx.category == "numerical":
        return edits.fix(
            kind, "Find the rows of the failing rank's data that make the loss non-finite",
            "Only one rank's loss went non-finite while every rank holds the same weights, so that rank's batch "
            "carries values the loss cannot take.",
            notes=["look for what the loss's transforms cannot take in that rank's shard: negative values under a "
                   "log, empty sequences averaged to 0/0, all-masked labels, extreme or infinite targets",
                   "filter or clip those rows before training (and guard the transform: clamp, eps)"],
            cost="low",
        )
    if ctx.category == "dataloader_worker":
        return edits.fix(
            kind, "Re-create the memory-mapped data files and leave them unchanged while the job runs",
            "A worker reading a memory-mapped file gets a bus error when the file is cut short or rewritten under it "
            "(a new export, a copy still running, a sync); the mapped pages no longer exist.",
            notes=["check the mapped files' sizes against what their headers say (np.load(path, mmap_mode='r').shape)",
                   "write new exports to a new path and switch over between runs; never rewrite a mapped file in "
                   "place", "if the files are intact, /dev/shm is the next suspect (increase_shm)"],
            cost="low",
        )
    flag = _data_flag(edits.cmd)
    source = flag.value if flag else "DATA.jsonl"
    out = _out_path(source, "repaired")
    notes = []
    where = re.search(r"line (\d+) column (\d+)", text)
    if where:
        notes.append(f"the parser stopped at line {where.group(1)}, column {where.group(2)}: "
                     f"sed -n '{where.group(1)}p' {source}")
    if "UnicodeDecodeError" in text or "codec can't decode" in text:
        notes.append(f"re-encode the file as UTF-8: iconv -f GB18030 -t UTF-8 {source} > {out} "
                     "(use the file's real encoding)")
    if re.search(r"role|tag", text, re.I):
        notes.append("rows whose turns do not alternate user/assistant (or use unknown role names) must be fixed "
                     "or dropped; `convert-data --to sharegpt` renames roles to human/gpt")
    if flag is not None:
        edits.rw.set_flag((flag.key,), out)
    extra = {}
    rows = ctx.data_sample if isinstance(ctx.data_sample, list) else None
    refused_turns = str(ctx.exception or "").endswith("TemplateError") or re.search(r"\brole\b", text, re.I)
    if refused_turns:
        # rows that parse but hold turns the chat template refuses: parsing them says nothing against this fix
        return edits.fix(
            kind, "Fix or drop the conversations the chat template refuses",
            "Some rows hold turns the model's chat template does not accept (a role it does not know, turns that "
            "do not alternate); the template stops at the first such row.",
            notes=notes, shell=[f"python -m triage convert-data --repair {source} {out}"], cost="low")
    if rows and all(isinstance(r, dict) and "_unparsed" not in r for r in rows) and ctx.category != "data_corrupt":
        extra = {"applicable": False,
                 "ruled_out": f"the data sample given ({len(rows)} rows) parses: every row is valid JSON"}
    return edits.fix(
        kind, "Drop or repair the rows that cannot be read",
        "A data file (or some of its rows) cannot be parsed, so loading stops at the first bad row.",
        notes=notes, shell=[f"python -m triage convert-data --repair {source} {out}"], cost="low", **extra,
    )
