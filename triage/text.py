"""Turn raw log bytes into clean text: decode, drop ANSI codes, resolve \\r rewrites, mask secrets."""

from __future__ import annotations

import html
import json
import re

from triage.secrets import mask_block, mask_deep, mask_secrets  # noqa: F401 - re-exported

MAX_LINE = 4096  # characters of one line that regexes ever see

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ORPHAN_ANSI = re.compile(
    r"^(?:\s*\[\d{0,3}(?:;\d{1,3}){0,4}m)+ ?"
)  # "\x1b" lost in a copy-paste: "[0m text"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A log scraped from a web page keeps its HTML escaping: "&lt;module&gt;", "KeyError: &#39;text&#39;".
_HTML_ENTITY = re.compile(r"&(?:lt|gt|quot|amp|apos|#0*3[49]|#x0*2[27]);", re.IGNORECASE)

def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def strip_ansi(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def resolve_carriage_returns(text: str, prefer: re.Pattern | None = None) -> str:
    """A terminal shows the last rewrite of a line; keep it (or the last segment a pattern cares about)."""
    if "\r" not in text:
        return text
    segments = [segment for segment in text.split("\r") if segment.strip()]
    if not segments:
        return ""
    if prefer is not None:
        for segment in reversed(segments):
            if prefer.search(segment):
                return segment
    return segments[-1]


def clean_line(raw: bytes | str, prefer: re.Pattern | None = None) -> str:
    text = decode(raw) if isinstance(raw, bytes | bytearray) else raw
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE]
    text = strip_ansi(text)
    if text.startswith(("[", " [")) and "m" in text[:20]:
        text = _ORPHAN_ANSI.sub("", text)
    text = resolve_carriage_returns(text.rstrip("\r\n"), prefer)
    if "&" in text and _HTML_ENTITY.search(text):
        text = html.unescape(text)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text.rstrip()


EMBEDDED_MARK = b"most recent call last):\\n"
MAX_EMBEDDED_LINES = 400


def embedded_lines(raw: bytes) -> list[bytes]:
    """A traceback kept as one escaped string inside a line (a JSON log record's "message", a repr):
    its lines, unescaped. Any other line comes back alone."""
    if EMBEDDED_MARK not in raw:
        return [raw]
    text = (
        raw.replace(b"\\\\", b"\x00").replace(b"\\n", b"\n").replace(b'\\"', b'"').replace(b"\\t", b"\t")
        .replace(b"\x00", b"\\")
    )
    return text.split(b"\n")[:MAX_EMBEDDED_LINES]


_RECORD_TEXT_KEYS = ("log", "message", "msg", "textPayload", "text", "event", "line")
_RECORD_TIME_KEYS = ("time", "timestamp", "@timestamp", "ts")
_RECORD_RANK_KEYS = ("rank", "global_rank", "world_rank", "RANK")
_RECORD_TRACE_KEYS = ("traceback", "exc_info", "stack_trace", "stacktrace", "stack")
_RECORD_CLASS_KEYS = ("exc_type", "exception_type", "error_type", "exception_class")
_RECORD_ERROR_KEYS = ("exc", "exception", "error", "error_message", "exc_message")
MAX_RECORD = 65536


def json_record_lines(raw: bytes) -> list[bytes] | None:
    """A structured log record on one line (Docker/Kubernetes json-file {"log": "...\\n", "time": ...},
    a cloud export's "textPayload", a JSON logger's "message"): the text it carries, one line per
    embedded newline, each led by the record's time. None when the line is not such a record."""
    stripped = raw.strip()
    if not (stripped[:1] == b"{" and stripped[-1:] == b"}") or len(stripped) > MAX_RECORD:
        return None
    try:
        record = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    text = next((record[key] for key in _RECORD_TEXT_KEYS if isinstance(record.get(key), str)), None)
    if text is None:
        return None
    when = next((record[key] for key in _RECORD_TIME_KEYS if isinstance(record.get(key), str)), "")
    rank = next((record[key] for key in _RECORD_RANK_KEYS if type(record.get(key)) is int), None)
    lead = (f"{when} " if when else "") + (f"[rank{rank}]: " if rank is not None else "")
    text = text.rstrip("\n") + _record_exception(record)
    return [(lead + line).encode("utf-8", "replace") for line in text.split("\n")[:MAX_EMBEDDED_LINES]]


def _record_exception(record: dict) -> str:
    """What a JSON logger keeps of an exception beside the message: its traceback text, or its class and
    message in their own fields ({"exc_type": "ValueError", "exc": "..."}), as the lines Python prints."""
    trace = next((record[key] for key in _RECORD_TRACE_KEYS if isinstance(record.get(key), str)), None)
    if trace and trace.strip():
        return "\n" + trace.rstrip("\n")
    kind = next((record[key] for key in _RECORD_CLASS_KEYS if isinstance(record.get(key), str)), None)
    said = next((record[key] for key in _RECORD_ERROR_KEYS if isinstance(record.get(key), str)), None)
    if kind and said is not None:
        return f"\n{kind}: {said.rstrip()}"
    return ""


# Masking lives in triage.secrets; these names stay importable from here.
__all__ = ["clean_line", "decode", "mask_block", "mask_deep", "mask_secrets", "resolve_carriage_returns", "strip_ansi"]
