"""A stable signature for grouping incidents: the same failure in another run gives the same digest."""

from __future__ import annotations

import hashlib
import re

_MASKS = [
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.\-~]*[/\\])+[\w.\-]*"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<addr>"),
    (re.compile(r"\[[0-9a-fA-F:]{3,}\](?::\d+)?"), "<addr>"),
    (re.compile(r"\b[\w\-]*\d[\w\-]*(?:\.[\w\-]+)+\b"), "<host>"),
    (re.compile(r"\b(?:rank|Rank|RANK|pid|PID|port|node|host|GPU|gpu|device|cuda)\s*[:=#]?\s*\d+"), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
]


def normalise(text: str | None) -> str:
    text = (text or "")[:500]
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip().lower()


def fingerprint(
    category: str, rule_id: str | None, exception: str | None, message: str | None, frames: list[dict] | None
) -> str:
    functions = [frame.get("function", "") for frame in (frames or [])][-3:]
    parts = [category, rule_id or "", exception or "", normalise(message), "|".join(functions)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
