"""torchrun's per-rank error files (`error.json` under --log-dir): the message and the traceback a
rank's elastic record holds, read as a stream of log lines."""

from __future__ import annotations

import io
import json

from triage.sources import Source
from triage.tracebacks import HEADER

MAX_BYTES = 16 * 1024 * 1024


def read_error_file(source: Source, rank: int | None, records: list[dict]):
    """The error file's traceback (or its message) as a stream; its summary is appended to `records`.
    None when the file is not an elastic error record."""
    raw = source.stream.read(MAX_BYTES)
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
        message = data.get("message", {})
        if isinstance(message, str):
            message = {"message": message}
        info = message.get("extraInfo") or {}
        callstack = info.get("py_callstack") or ""
        text = message.get("message") or ""
        stamp = info.get("timestamp")
    except (ValueError, AttributeError):
        return None
    records.append(
        {
            "source": source.name,
            "rank": rank,
            "message": text,
            "timestamp": float(stamp) if str(stamp or "").isdigit() else None,
        }
    )
    body = callstack if HEADER in callstack else text
    return io.BytesIO(body.encode("utf-8", errors="replace"))
