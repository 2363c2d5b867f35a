"""Timestamps as they appear in training logs, as epoch seconds (only their order matters)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_ISO = re.compile(r"(20\d\d)-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
# glog as torch prints it: "E0612", and "E612" where the month is one digit (c10 does not pad it)
_GLOG = re.compile(r"^\[?[EWIF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})")
DEFAULT_YEAR = datetime.now(UTC).year


def parse(text: str, year: int | None = None) -> float | None:
    head = text[:80]
    match = _ISO.search(head)
    if match:
        y, mo, d, h, mi, s, frac = match.groups()
        return _epoch(int(y), int(mo), int(d), int(h), int(mi), int(s), frac)
    match = _GLOG.search(head)
    if match:
        mo, d, h, mi, s, frac = match.groups()
        return _epoch(year or DEFAULT_YEAR, int(mo), int(d), int(h), int(mi), int(s), frac)
    return None


def _epoch(y, mo, d, h, mi, s, frac) -> float | None:
    try:
        value = datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()
    except ValueError:
        return None
    if frac:
        value += int(frac[:6].ljust(6, "0")) / 1e6
    return value


def year_of(text: str) -> int | None:
    match = _ISO.search(text[:80])
    return int(match.group(1)) if match else None
