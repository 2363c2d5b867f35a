"""Memory series from logs and the "will it fit" estimator (helper-owned)."""
from __future__ import annotations


class MemorySeriesCollector:
    """Fed by the engine's scan with lines that contain one of LITERALS.

    feed(source, rank, lineno, text, t) where t is seconds (float) or None;
    result() returns {"series": [...], "oom": {...} | None}.
    """

    LITERALS: tuple[str, ...] = ("out of memory", "MiB", "GiB", "memory")

    def __init__(self) -> None:
        self.series: list[dict] = []

    def feed(self, source: str, rank: int | None, lineno: int, text: str, t: float | None) -> None:
        return None

    def result(self, max_points: int = 5000) -> dict:
        return {"series": self.series, "oom": None}


def estimate(command: str | None, configs: dict, facts: dict) -> dict | None:
    """Return the estimate dict (components before/after fixes) or None when unknown."""
    return None
