"""Log exports: what a cloud console or a notebook runner saves instead of the log itself.

- a CSV download of a logs explorer (GKE/Cloud Logging, Loki, CloudWatch Insights): a header row naming a
  text column (`textPayload`, `message`, `log`, ...), one row per record, multi-line payloads quoted;
- a JSON array of records (Kaggle's `__notebook__.log`: `[{"stream_name": ..., "time": ..., "data": ...}]`,
  a `gcloud logging read --format=json` dump).

Both become the plain lines the program printed, oldest first (consoles export newest first), each led by
the record's time and, where the export names one, its pod or host ("2026-11-20T03:11:02Z pod-0-0: ...").
Anything else is left alone. Nothing here executes or evaluates what it reads.
"""

from __future__ import annotations

import csv
import io
import json

MAX_EXPORT = 64 * 1024**2  # an export larger than this is read as plain text
MAX_LINES = 2_000_000
TEXT_KEYS = ("textPayload", "jsonPayload.message", "jsonPayload.msg", "message", "msg", "log", "line", "text", "data")
TIME_KEYS = ("timestamp", "time", "@timestamp", "receiveTimestamp", "ts", "Timestamp")
HOST_KEYS = ("resource.labels.pod_name", "labels.k8s-pod/name", "kubernetes.pod_name", "pod_name", "pod",
             "resource.labels.instance_id", "host", "hostname", "logStream", "@logStream")


def sniff(head: bytes) -> str | None:
    """'csv' or 'json' when the first bytes of a file open such an export, else None."""
    start = head.lstrip()[:1]
    if start == b"[" and head.lstrip()[1:].lstrip()[:1] == b"{":
        return "json"
    first = head.split(b"\n", 1)[0].strip().decode("utf-8", "replace")
    if "," in first and not first.startswith(("{", "[", "#")):
        columns = [column.strip().strip('"') for column in first.split(",")]
        if any(key in columns for key in TEXT_KEYS) and len(columns) <= 64:
            return "csv"
    return None


def _lookup(record: dict, key: str):
    """A field by its dotted name, flat ("resource.labels.pod_name" as one key) or nested."""
    if key in record:
        return record[key]
    value = record
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _first(record: dict, keys) -> str | None:
    for key in keys:
        value = _lookup(record, key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _records(data: bytes, kind: str) -> list[dict] | None:
    text = data.decode("utf-8", "replace")
    if kind == "json":
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        records = [item for item in parsed if isinstance(item, dict)] if isinstance(parsed, list) else []
        return records or None
    try:
        return list(csv.DictReader(io.StringIO(text)))
    except csv.Error:
        return None


def lines(data: bytes, kind: str) -> list[bytes] | None:
    """The printed lines an export holds, oldest first; None when it is not one after all."""
    records = _records(data, kind)
    if not records:
        return None
    rows = []
    for record in records:
        text = _first(record, TEXT_KEYS)
        if text is None:
            continue
        rows.append((_first(record, TIME_KEYS), _first(record, HOST_KEYS), text))
    if not rows:
        return None
    times = [when for when, _, _ in rows if when]
    if len(times) == len(rows) and times[0] > times[-1]:
        rows.reverse()  # newest first, as consoles export: read it in the order it happened
    out: list[bytes] = []
    for when, host, text in rows:
        lead = (f"{when} " if when else "") + (f"{host}: " if host else "")
        for line in text.rstrip("\n").split("\n"):
            out.append((lead + line).encode("utf-8", "replace"))
            if len(out) >= MAX_LINES:
                return out
    return out
