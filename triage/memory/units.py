"""Memory sizes in log text -> MiB."""
from __future__ import annotations

import re

_FACTORS = {
    "b": 1 / 2**20, "bytes": 1 / 2**20, "kb": 1000 / 2**20, "kib": 1 / 1024, "k": 1 / 1024,
    "mb": 1e6 / 2**20, "mib": 1.0, "m": 1.0, "gb": 1e9 / 2**20, "gib": 1024.0, "g": 1024.0,
    "tb": 1e12 / 2**20, "tib": 2**20,
}
SIZE = r"(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]|B|bytes)"


def to_mib(number: str | float, unit: str) -> float | None:
    factor = _FACTORS.get(unit.strip().lower())
    if factor is None:
        return None
    try:
        return round(float(number) * factor, 3)
    except ValueError:
        return None


def size_mib(text: str) -> float | None:
    match = re.search(SIZE, text, re.I)
    return to_mib(match.group(1), match.group(2)) if match else None
