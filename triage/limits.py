"""Safety limits for reading uploads and archives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    max_total_bytes: int = 2 * 1024**3  # expanded bytes over all members of one upload
    max_members: int = 10_000
    max_ratio: int = 200  # expanded / compressed, checked while streaming
    max_member_bytes: int = 1024**3
    max_depth: int = 2  # archives inside archives
    ratio_floor_bytes: int = 10 * 1024**2  # small expansions never trip the ratio check
