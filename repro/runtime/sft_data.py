"""Supervised fine-tuning rows, read the way training scripts read them (plain indexing, no .get).

Formats: sharegpt (conversations/from/value), messages (messages/role/content), alpaca
(instruction/input/output), prompt_completion (prompt/completion), text (text). A row of the wrong
layout raises exactly what a script indexing it would raise: KeyError 'conversations', ...
"""
import json

FORMATS = ("sharegpt", "messages", "alpaca", "prompt_completion", "text")


def read_rows(path):
    """[(line number, row)] from a JSON array, {"data": [...]}, or JSON Lines."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and "\n{" not in stripped.strip()):
        data = json.loads(text)
        if isinstance(data, dict):
            data = data.get("data") or data.get("train") or [data]
        return list(zip(array_lines(text, len(data)), data, strict=False))
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            rows.append((number, json.loads(line)))
    return rows


def array_lines(text, count):
    """Line number where each top-level element of a JSON array starts."""
    decoder = json.JSONDecoder()
    index = text.index("[") + 1
    lines = []
    while len(lines) < count:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        lines.append(text.count("\n", 0, index) + 1)
        _, index = decoder.raw_decode(text, index)
    return lines


def detect(row):
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


def to_turns(row, fmt):
    """[(role, text)] for one row read as `fmt`; raises like a script indexing the row would."""
    if fmt == "sharegpt":
        roles = {"human": "user", "gpt": "assistant", "system": "system"}
        return [(roles[turn["from"]], turn["value"]) for turn in row["conversations"]]
    if fmt == "messages":
        return [(message["role"], message["content"]) for message in row["messages"]]
    if fmt == "alpaca":
        prompt = row["instruction"] + ("\n\n" + row["input"] if row.get("input") else "")
        return [("user", prompt), ("assistant", row["output"])]
    if fmt == "prompt_completion":
        return [("user", row["prompt"]), ("assistant", row["completion"])]
    if fmt == "text":
        return [("assistant", row["text"])]
    raise ValueError(f"unknown data format {fmt!r}")


def byte_encode(text):
    return list(text.encode("utf-8"))


class SFTDataset:
    """Lazy: each row is read when the trainer asks for it, as in most fine-tuning scripts."""

    def __init__(self, rows, fmt="auto", encode=byte_encode, max_length=128, pad_id=0, eos_id=0):
        self.rows = rows
        self.fmt = fmt if fmt != "auto" else (detect(rows[0][1]) if rows else "text") or "text"
        self.encode, self.max_length, self.pad_id, self.eos_id = encode, max_length, pad_id, eos_id

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        _, row = self.rows[index]
        ids, labels = [], []
        for role, content in to_turns(row, self.fmt):
            piece = self.encode(f"<|{role}|>\n{content}\n") + [self.eos_id]
            ids += piece
            labels += piece if role == "assistant" else [-100] * len(piece)
        ids, labels = ids[: self.max_length], labels[: self.max_length]
        return {"input_ids": ids, "labels": labels}
