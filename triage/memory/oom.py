"""Parse the PyTorch CUDA out-of-memory message (both the current and the pre-2.1 wording).

Current:  CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB
          of which 1.02 GiB is free. ... Of the allocated memory 75.3 GiB is allocated by PyTorch,
          and 2.1 GiB is reserved by PyTorch but unallocated.
Older:    CUDA out of memory. Tried to allocate 688.00 MiB (GPU 1; 39.39 GiB total capacity;
          37.95 GiB already allocated; 633.12 MiB free; 38.19 GiB reserved in total by PyTorch)
          -> reserved-but-unallocated = reserved in total - already allocated.
"""
from __future__ import annotations

import re

from .units import SIZE, to_mib

_PATTERNS = {
    "tried_mib": rf"Tried to allocate {SIZE}",
    "gpu": r"\bGPU (\d+)(?: has a total|;)",
    "capacity_mib": rf"(?:total capac\w* of {SIZE}|{SIZE} total capacity)",
    "free_mib": rf"(?:of which {SIZE} is free|{SIZE} free;)",
    "allocated_mib": rf"(?:{SIZE} is allocated by PyTorch|{SIZE} already allocated)",
    "reserved_unallocated_mib": rf"{SIZE} is reserved by PyTorch but unallocated",
    "reserved_total_mib": rf"{SIZE} reserved in total by PyTorch",
}


def _size(match: re.Match) -> float | None:
    groups = [g for g in match.groups() if g is not None]
    return to_mib(groups[0], groups[1]) if len(groups) >= 2 else None


def parse_oom(text: str | None) -> dict | None:
    """The numbers of one OOM message in MiB, or None when `text` is not one."""
    if not text or "out of memory" not in text.lower():
        return None
    text = text[:4000]
    found: dict = {}
    for key, pattern in _PATTERNS.items():
        match = re.search(pattern, text, re.I)
        if not match:
            continue
        found[key] = int(match.group(1)) if key == "gpu" else _size(match)
    if "tried_mib" not in found and "capacity_mib" not in found:
        return None
    reserved_total = found.pop("reserved_total_mib", None)
    if found.get("reserved_unallocated_mib") is None and reserved_total is not None and found.get("allocated_mib"):
        found["reserved_unallocated_mib"] = round(max(reserved_total - found["allocated_mib"], 0.0), 3)
    for key in ("tried_mib", "capacity_mib", "free_mib", "allocated_mib", "reserved_unallocated_mib", "gpu"):
        found.setdefault(key, None)
    return found
