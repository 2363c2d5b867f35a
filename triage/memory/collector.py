"""Collect memory series from the log lines the engine's scan hands over.

Series: {"name", "source", "rank", "gpu", "unit": "MiB", "kind", "x": "time"|"line",
         "points": [[t_or_lineno, MiB], ...], "capacity": MiB or None}
x is "time" (seconds) when every point had a time, else "line" (the line number in its source).
"""
from __future__ import annotations

from .downsample import downsample
from .formats import PARSERS, SourceState
from .oom import parse_oom

MAX_LINE = 4000
COMPACT_AT = 200_000  # a series this long is compacted while collecting, to bound memory


class MemorySeriesCollector:
    """Fed by the engine's scan with lines that contain one of LITERALS.

    feed(source, rank, lineno, text, t) where t is seconds (float) or None;
    result() returns {"series": [...], "oom": {...} | None}.
    """

    LITERALS: tuple[str, ...] = (
        "out of memory", "OutOfMemoryError", "MiB", "memory.used", "NVIDIA-SMI", "DCGM_FI_DEV_FB_", "FBUSD",
        "GPU ", "memory summary, device ID", "Allocated memory", "emory_allocated", "emory_reserved",
        "emory allocated", "emory reserved", "Max_MA", "CPU Virtual Memory", "_mem_gpu_", "_mem_cpu_",
        "system.gpu.", "system.proc.memory", "anon-rss", "Mem:", "exceeded memory limit",
    )

    def __init__(self) -> None:
        self._series: dict[tuple, dict] = {}
        self._states: dict[str, SourceState] = {}
        self._oom: dict | None = None

    def feed(self, source: str, rank: int | None, lineno: int, text: str, t: float | None) -> None:
        try:
            self._feed(source, rank, lineno, text[:MAX_LINE], t)
        except Exception:  # a malformed line must never stop the diagnosis
            return None

    def _feed(self, source: str, rank: int | None, lineno: int, text: str, t: float | None) -> None:
        state = self._states.setdefault(source, SourceState())
        if self._oom is None and "out of memory" in text.lower():
            oom = parse_oom(text)
            if oom:
                self._oom = {"rank": rank, **oom, "line": text.strip()[:1000], "source": source, "lineno": lineno}
        for parser in PARSERS:
            readings = parser(text, state)
            if readings:
                break
        else:
            return
        for reading in readings:
            if reading.value_mib is None:
                continue
            key = (source, rank, reading.gpu, reading.kind)
            series = self._series.get(key)
            if series is None:
                name = " ".join(x for x in (reading.kind, f"rank {rank}" if rank is not None else "",
                                            f"gpu {reading.gpu}" if reading.gpu is not None else "", f"({source})") if x)
                series = self._series[key] = {
                    "name": name, "source": source, "rank": rank, "gpu": reading.gpu, "unit": "MiB",
                    "kind": reading.kind, "capacity": None, "_raw": [],
                }
            if reading.capacity_mib:
                series["capacity"] = reading.capacity_mib
            series["_raw"].append((reading.t if reading.t is not None else t, lineno, round(reading.value_mib, 3)))
            if len(series["_raw"]) > COMPACT_AT:
                series["_raw"] = [tuple(p) for p in downsample([list(p) for p in series["_raw"]], COMPACT_AT // 4)]

    def result(self, max_points: int = 5000) -> dict:
        out = []
        for series in self._series.values():
            raw = series["_raw"]
            timed = all(p[0] is not None for p in raw)
            points = [[p[0] if timed else p[1], p[2]] for p in raw]
            if series["capacity"] is None and self._oom and series["kind"].startswith("gpu") \
                    and series["gpu"] == self._oom.get("gpu") and series["rank"] == self._oom.get("rank"):
                series_capacity = self._oom.get("capacity_mib")
            else:
                series_capacity = series["capacity"]
            public = {k: v for k, v in series.items() if not k.startswith("_")}
            public.update(x="time" if timed else "line", points=downsample(points, max_points),
                          capacity=series_capacity)
            out.append(public)
        out.sort(key=lambda s: (str(s["source"]), s["rank"] if s["rank"] is not None else -1,
                                s["gpu"] if s["gpu"] is not None else -1, s["kind"]))
        return {"series": out, "oom": self._oom}
