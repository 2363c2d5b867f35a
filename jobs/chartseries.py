"""Chart series computed on the server (STYLE.md rule 12).

The browser gets ready-to-draw Plotly traces: memory curves are min/max-downsampled to at
most MAX_POINTS points a trace, with an overall point budget so a page stays < 2 MB.
The timeline's traces are jobs.timelinechart's.
"""
from __future__ import annotations

import math

from jobs.presenters import as_dict, as_int, as_list, text
from triage.memory.downsample import downsample

MAX_POINTS = 5000
TOTAL_POINT_BUDGET = 60_000
MAX_MEMORY_SERIES_SHOWN = 12

def _points(series: dict) -> list[tuple[float, float]]:
    raw = as_list(series.get("points"))
    try:  # the engine's well-formed [[t, v], ...]: one fast pass
        points = [(float(t), float(v)) for t, v in raw]
        if all(math.isfinite(v) for _, v in points):
            return points
    except (TypeError, ValueError):
        pass
    points = []
    for point in raw:
        if isinstance(point, (list, tuple)) and len(point) >= 2:
            x, y = point[0], point[1]
            if (isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(y, bool)
                    and math.isfinite(y)):
                points.append((x, y))
    return points


def _series_label(series: dict) -> str:
    name = text(series.get("name"))
    if name:
        return name
    rank, gpu = as_int(series.get("rank")), as_int(series.get("gpu"))
    parts = [f"rank {rank}" if rank is not None else "", f"GPU {gpu}" if gpu is not None else "",
             text(series.get("kind"))]
    return " ".join(p for p in parts if p) or "memory"


def _envelope(all_points: list[list], buckets: int = 400) -> tuple[list, list, list]:
    """Min and max over all series per time bucket: one pass per series over its own min/max samples."""
    starts = [points[0][0] for points in all_points if points]
    ends = [points[-1][0] for points in all_points if points]
    if not starts:
        return [], [], []
    low_x, high_x = min(starts), max(ends)
    width = (high_x - low_x) / buckets or 1
    lows = [math.inf] * buckets
    highs = [-math.inf] * buckets
    for points in all_points:
        for x, y in downsample(points, 2 * buckets):
            index = min(buckets - 1, max(0, int((x - low_x) / width)))
            if y < lows[index]:
                lows[index] = y
            if y > highs[index]:
                highs[index] = y
    keys = [k for k in range(buckets) if lows[k] != math.inf]
    return [low_x + (k + 0.5) * width for k in keys], [lows[k] for k in keys], [highs[k] for k in keys]


def memory(data: dict) -> dict:
    mem = as_dict(data.get("memory"))
    raw_series = [s for s in as_list(mem.get("series")) if isinstance(s, dict)]
    failing_rank = as_int(data.get("failing_rank"))
    parsed = [(s, _points(s)) for s in raw_series]
    parsed = [(s, p) for s, p in parsed if p]
    traces = []
    shown = parsed
    if len(parsed) > MAX_MEMORY_SERIES_SHOWN:
        # Too many curves to read: an envelope of all ranks, plus the failing rank and the highest peaks.
        xs, lows, highs = _envelope([p for _, p in parsed])
        traces.append({"type": "scatter", "mode": "lines", "name": f"min of {len(parsed)} series", "x": xs,
                       "y": lows, "line": {"width": 0, "color": "#93c5fd"}, "hoverinfo": "skip"})
        traces.append({"type": "scatter", "mode": "lines", "name": f"max of {len(parsed)} series", "x": xs,
                       "y": highs, "fill": "tonexty", "fillcolor": "rgba(147,197,253,0.35)",
                       "line": {"width": 1, "color": "#60a5fa"}})
        by_peak = sorted(parsed, key=lambda item: -max(v for _, v in item[1]))
        failing = [item for item in parsed if as_int(item[0].get("rank")) == failing_rank and failing_rank is not None]
        shown = (failing + [i for i in by_peak if i not in failing])[:6]
    per_trace = max(50, min(MAX_POINTS, TOTAL_POINT_BUDGET // max(1, len(shown))))
    for series, points in shown:
        kept = downsample(points, per_trace)
        is_failing = failing_rank is not None and as_int(series.get("rank")) == failing_rank
        label = _series_label(series) + (" (first failure)" if is_failing else "")
        traces.append({"type": "scatter", "mode": "lines", "name": label,
                       "x": [p[0] for p in kept], "y": [p[1] for p in kept],
                       "line": {"width": 3.5, "color": "#c2410c"} if is_failing else {"width": 1.5}})

    capacities = sorted({s.get("capacity") for s, _ in parsed if isinstance(s.get("capacity"), (int, float))})
    all_x = [p[0] for _, points in parsed for p in points]
    x_range = [min(all_x), max(all_x)] if all_x else [0, 1]
    for capacity in capacities[:4]:
        traces.append({"type": "scatter", "mode": "lines", "name": f"device capacity {capacity:,.0f} MiB",
                       "x": x_range, "y": [capacity, capacity], "line": {"color": "#b91c1c", "dash": "dash", "width": 2}})

    oom = _oom_point(data, mem, parsed, failing_rank)
    if oom:
        traces.append({"type": "scatter", "mode": "markers+text", "name": "OOM", "x": [oom[0]], "y": [oom[1]],
                       "text": ["OOM"], "textposition": "top center",
                       "marker": {"symbol": "x", "size": 16, "color": "#b91c1c"}})

    est = as_dict(mem.get("estimate"))
    if isinstance(est.get("total_gib"), (int, float)) and parsed:
        traces.append(_level("estimate before fix", est["total_gib"] * 1024, x_range, "#7c3aed", "dot"))
        for after in as_list(est.get("after_fixes"))[:3]:
            if isinstance(after, dict) and isinstance(after.get("total_gib"), (int, float)):
                traces.append(_level(f"estimate after {text(after.get('kind')) or 'fix'}",
                                     after["total_gib"] * 1024, x_range, "#15803d", "dashdot"))
    units = {text(s.get("unit")) for s, _ in parsed} or {"MiB"}
    return {"traces": traces, "unit": "/".join(sorted(u for u in units if u)) or "MiB",
            "series_count": len(parsed), "has_data": bool(parsed)}


def _level(name, value, x_range, color, dash) -> dict:
    return {"type": "scatter", "mode": "lines", "name": f"{name}: {value / 1024:.1f} GiB", "x": x_range,
            "y": [value, value], "line": {"color": color, "dash": dash, "width": 2}}


def _oom_point(data, mem, parsed, failing_rank):
    oom = as_dict(mem.get("oom"))
    if isinstance(oom.get("t"), (int, float)) and isinstance(oom.get("value"), (int, float)):
        return oom["t"], oom["value"]
    if text(data.get("category")) != "gpu_oom" or not parsed:
        return None
    candidates = [p for s, p in parsed if as_int(s.get("rank")) == failing_rank] or [p for _, p in parsed]
    last = max((points[-1] for points in candidates), key=lambda p: p[0])
    return last
