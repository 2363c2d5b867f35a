"""Grouping signatures for a diagnosis: what stays the same when the same failure happens again.

Pure Python (no Django), so that the grouping benchmark runs the exact code the product runs.

Two hashes per incident, as Sentry does it: an incident joins a problem when ANY of them matches
(the fine one is tried first).

- fine:   category + exception + masked message + the innermost frames of the user's own code
          (file base name and function, never a directory or line number)
- coarse: category + exception + the first clause of the masked message (with an exception), or
          category + the engine rule that named it + the error codes in the line (Xid number,
          errno, signal name) for signals, watchdogs and kernel lines: the log line the engine
          quotes varies from run to run, the rule and the codes do not. Survives edits to the
          user's script and other runs' noise.

Everything that differs between two runs of one failure is masked first: paths, hosts,
addresses and ports, ranks, PIDs, sizes, timings, timestamps, hex ids and all other numbers.
Titles are built from the masked parts only, so no job's numbers leak into a shared title.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

MESSAGE_LIMIT = 300
CLAUSE_LIMIT = 90
KEY_WORDS = 5
EVIDENCE_LINES = 12
USER_FRAMES = 3

# Log-line prefixes that leak into messages: glog ("E1130 21:24:53.349000 24480 file.cpp:12]"),
# timestamps, and what follows them (the next log record glued on by the launcher).
_TAIL_CUTS = [
    re.compile(r"\s=====+.*$", re.S),
    re.compile(r"\s\{['\"].*$", re.S),  # a metrics dict printed by the trainer right after
    re.compile(r"\s\d+%\|.*$", re.S),  # a progress bar
    re.compile(r"\s*(?:\"\"\"|''')\s*$"),
    re.compile(r"\s\d{1,2}/\d{1,2}/\d{4} \d\d:\d\d:\d\d\b.*$", re.S),
    re.compile(r"\s(?:\[?[EWIF]\d{4} \d\d:\d\d:\d\d[.\d]*).*$", re.S),
]
_GLOG = re.compile(r"\[?[EWIF]\d{4}\s+\d\d:\d\d:\d\d(?:\.\d+)?(?:\s+\d+)?(?:\s+[\w./\\-]+:\d+)?\]?\s*")
# (pattern, placeholder): order matters, the specific ones come before the plain numbers.
_MASKS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+"), "<url>"),
    (re.compile(r"\[[0-9a-fA-F:]*:[0-9a-fA-F:]*\](?::\d+)?"), "<addr>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<addr>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~+-]*[/\\])+[\w.+-]*"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b"), "<hex>"),
    # Host names: a dotted name with a digit somewhere, or a hyphenated word that ends in digits.
    (re.compile(r"\b(?=[\w-]*\d)[A-Za-z][\w-]*(?:\.[A-Za-z][\w-]*)+\b"), "<host>"),
    (re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*-\d+\b"), "<host>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes?|[KMGT]b)\b", re.I), "<size>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|ns|milliseconds?|seconds?|secs?|s|minutes?|mins?|hours?|h)\b"),
     "<duration>"),
    (re.compile(r"\b(rank|local_rank|pid|port|node|gpu|device|cuda|step|epoch|seqnum|worker)(\s*[:=#(]?\s*)\d+",
                re.I), r"\1\2<n>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"(?:<n>[,\s]+)+<n>"), "<n>"),
    (re.compile(r"\s+"), " "),
]
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "<string>",
                    "pyarrow/", "/bin/torchrun", "/bin/accelerate", "/bin/deepspeed")


def clean_message(message: str | None) -> str:
    """The message without log prefixes and without the next log record glued on."""
    text = " ".join(str(message or "").split())[:2000]
    text = _GLOG.sub("", text)
    for cut in _TAIL_CUTS:
        text = cut.sub("", text)
    return text.strip()


def mask(text: str | None) -> str:
    """Mask what differs between runs; keeps case (used for titles)."""
    text = str(text or "")[:2000]
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()


def masked_message(message: str | None) -> str:
    return mask(clean_message(message))[:MESSAGE_LIMIT]


_PLACEHOLDERS = {"n", "path", "hex", "host", "addr", "size", "duration", "time", "id", "url"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_'-]*")


def first_clause(masked: str) -> str:
    """The gist of a masked message: its first KEY_WORDS words, placeholders and mangled symbols left out.

    Another library version or another author words the rest differently ("invalid start byte" or
    "invalid continuation byte", one mangled C++ name or another); the opening words name the failure.
    """
    head = re.split(r"(?<=[.;!?])\s|\s\(then\s", masked, maxsplit=1)[0][:CLAUSE_LIMIT]
    words = [word for word in _WORD.findall(head) if word.lower() not in _PLACEHOLDERS and len(word) > 1
             and not word.startswith("_Z")]
    return " ".join(words[:KEY_WORDS]) if words else head


def is_user_frame(frame: dict) -> bool:
    path = str(frame.get("file") or "")
    return bool(path) and not any(marker in path for marker in _LIBRARY_MARKERS)


_CODES = [
    re.compile(r"\bXid\b\s*(?:\([^)]*\))?\s*:?\s*(\d+)"),  # NVIDIA Xid error code (79: fallen off the bus, 74: NVLink)
    re.compile(r"\[Errno (\d+)\]"),
    re.compile(r"\b(SIG[A-Z]{2,6})\b"),
]


def error_codes(message: str | None) -> list[str]:
    """Codes that name the failure and must not be masked: Xid numbers, errno values, signal names."""
    text = clean_message(message)
    return sorted({match for pattern in _CODES for match in pattern.findall(text)})


def _base_name(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def user_frames(frames: list | None) -> list[str]:
    """The innermost frames of the user's own code as 'file.py:function' (no directories, no lines)."""
    picked = [f"{_base_name(str(frame.get('file') or ''))}:{frame.get('function') or ''}"
              for frame in (frames or []) if isinstance(frame, dict) and is_user_frame(frame)]
    return picked[-USER_FRAMES:]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).lower().encode()).hexdigest()[:40]


def evidence_lines(data: dict) -> list[str]:
    """The diagnosis's evidence, each line masked and lower-cased, duplicates dropped, in order."""
    root = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    items = list(root.get("evidence") or []) + list(data.get("evidence") or [])
    seen, lines = set(), []
    for item in items:
        text = item.get("text") if isinstance(item, dict) else item
        line = mask(clean_message(str(text or ""))).lower()[:240]
        if line and line not in seen:
            seen.add(line)
            lines.append(line)
        if len(lines) >= EVIDENCE_LINES:
            break
    return lines


@dataclass
class Signature:
    fine: str
    coarse: str
    category: str
    exception: str
    message: str  # masked, case kept
    frames: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    @property
    def hashes(self) -> list[tuple[str, str]]:
        """(kind, value), fine first: the order in which a new incident looks for its problem."""
        return [("fine", self.fine), ("coarse", self.coarse)]

    @property
    def title(self) -> str:
        return title_from(self.category, self.exception, self.message)


def title_from(category: str, exception: str, message: str) -> str:
    if exception and message:
        title = f"{exception}: {message}"
    else:
        title = exception or message or f"{category or 'unknown'} failure"
    return title if len(title) <= 200 else title[:199] + "…"


def signature(data: dict) -> Signature:
    """The grouping signature of one CONTRACT diagnosis JSON."""
    root = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    category = str(data.get("category") or "unknown")[:40]
    exception = str(root.get("exception") or "").strip()[:200]
    raw_message = root.get("message")
    message = masked_message(raw_message)
    if not message and not exception:
        raw_message = data.get("summary")
        message = masked_message(raw_message)
    frames = [frame for frame in (root.get("frames") or []) if isinstance(frame, dict)]
    own = user_frames(frames)
    innermost = str(frames[-1].get("function") or "") if frames else ""
    rule = str(data.get("rule_id") or "")
    fine = _digest("fine", category, rule, exception, message, "|".join(own), innermost)
    if exception:
        coarse = _digest("coarse", category, exception, first_clause(message))
    else:
        coarse = _digest("coarse-rule", category, rule or first_clause(message),
                         ",".join(error_codes(raw_message)))
    return Signature(fine=fine, coarse=coarse, category=category, exception=exception, message=message,
                     frames=own, evidence=evidence_lines(data))


class Grouper:
    """In-memory grouping by the product's rule (any hash joins, fine first); used by the benchmark.

    The database version is knowledge.services.record: both call `choose`.
    """

    def __init__(self):
        self.index: dict[tuple[str, str], int] = {}
        self.problems: dict[int, list] = {}

    def add(self, key, data: dict) -> int:
        sig = signature(data)
        problem = choose(sig, lambda kind, value: self.index.get((kind, value)))
        if problem is None:
            problem = len(self.problems) + 1
            self.problems[problem] = []
        for kind, value in sig.hashes:
            self.index.setdefault((kind, value), problem)
        self.problems[problem].append(key)
        return problem


def choose(sig: Signature, lookup):
    """The problem an incident joins: the first hash (fine, then coarse) that some problem holds."""
    for kind, value in sig.hashes:
        found = lookup(kind, value)
        if found is not None:
            return found
    return None
