"""Memory series from logs and the "will it fit" estimator (helper-owned).

MemorySeriesCollector (collector.py): LITERALS / feed(source, rank, lineno, text, t) / result().
estimate(command, configs, facts, *, oom=None, world_size=None, overrides=None) (estimator.py).
parse_oom(text) (oom.py): the numbers of a CUDA OOM message in MiB.
"""
from __future__ import annotations

from .collector import MemorySeriesCollector
from .estimator import FORMULAS, estimate
from .oom import parse_oom

__all__ = ["FORMULAS", "MemorySeriesCollector", "estimate", "parse_oom"]
