"""The memory chart's series, computed on the server (STYLE.md rule 12).

Two charts, read separately:
  - curves: the measured memory per rank (downsampled min/max, at most MAX_POINTS a trace, an envelope
    when there are too many ranks), the device capacity and the OOM point. They own the y-axis: no
    estimate line can flatten them. The x-axis is one kind only: seconds since the first reading when
    the series carry times, else the line number in their log; series of the other kind are left out
    and counted, never mixed in.
  - estimate_traces: the estimator's total before and after each fix as bars (with the range when an
    input is unknown) and the capacity as a line, on their own axis.
`show_memory(data)`: the section belongs to memory incidents and to logs that hold memory readings.
"""
from __future__ import annotations

import html
import math

from jobs.presenters import as_dict, as_int, as_list, text
from triage.memory.downsample import downsample

MAX_POINTS = 5000
TOTAL_POINT_BUDGET = 60_000
MAX_MEMORY_SERIES_SHOWN = 12
MEMORY_CATEGORIES = ("gpu_oom", "host_oom")


def show_memory(data: dict) -> bool:
    mem = as_dict(data.get("memory"))
    has_series = any(isinstance(s, dict) and as_list(s.get("points")) for s in as_list(mem.get("series")))
    return text(data.get("category")) in MEMORY_CATEGORIES or has_series


def _points(series: dict) -> list[tuple[float, float]]:
    raw = as_list(series.get("points"))
    try:  # the engine's well-formed [[t, v], ...]: one fast pass
        points = [(float(t), float(v)) for t, v in raw]
        if all(math.isfinite(v) and math.isfinite(t) for t, v in points):
            return points
    except (TypeError, ValueError):
        pass
    points = []
    for point in raw:
        if isinstance(point, (list, tuple)) and len(point) >= 2:
            x, y = point[0], point[1]
            if (isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(y, bool)
                    and not isinstance(x, bool) and math.isfinite(y) and math.isfinite(x)):
                points.append((x, y))
    return points


def _series_label(series: dict) -> str:
    """Plotly renders a little HTML in trace names: text from a log is escaped so it shows as typed."""
    name = html.escape(text(series.get("name")), quote=False)
    if name:
        return name
    rank, gpu = as_int(series.get("rank")), as_int(series.get("gpu"))
    parts = [f"rank {rank}" if rank is not None else "", f"GPU {gpu}" if gpu is not None else "",
             html.escape(text(series.get("kind")), quote=False)]
    return " ".join(p for p in parts if p) or "memory"


def _x_kind(series: dict, points: list) -> str:
    kind = text(series.get("x"))
    if kind in ("time", "line"):
        return kind
    # older documents say nothing: fractional or epoch-like values are times, whole numbers line numbers
    return "time" if any(x != int(x) or x > 1e8 for x, _ in points[:50]) else "line"


def _one_x_kind(parsed: list) -> tuple[list, str, int]:
    """Keep the series of one x kind (time if any has times); shift times to seconds since the start."""
    kinds = [_x_kind(s, p) for s, p in parsed]
    chosen = "time" if "time" in kinds else "line"
    kept = [(s, p) for (s, p), k in zip(parsed, kinds, strict=True) if k == chosen]
    left_out = len(parsed) - len(kept)
    if chosen == "time" and kept:
        start = min(p[0][0] for _, p in kept)
        kept = [(s, [(x - start, y) for x, y in p]) for s, p in kept]
    return kept, chosen, left_out


def _envelope(all_points: list[list], buckets: int = 400) -> tuple[list, list, list]:
    """Min and max over all series per x bucket."""
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
            lows[index] = min(lows[index], y)
            highs[index] = max(highs[index], y)
    keys = [k for k in range(buckets) if lows[k] != math.inf]
    return [low_x + (k + 0.5) * width for k in keys], [lows[k] for k in keys], [highs[k] for k in keys]


def memory(data: dict) -> dict:
    mem = as_dict(data.get("memory"))
    raw_series = [s for s in as_list(mem.get("series")) if isinstance(s, dict)]
    failing_rank = as_int(data.get("failing_rank"))
    parsed = [(s, _points(s)) for s in raw_series]
    parsed = [(s, p) for s, p in parsed if p]
    parsed, x_kind, left_out = _one_x_kind(parsed)
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
    units = {text(s.get("unit")) for s, _ in parsed} or {"MiB"}
    estimate = estimate_bars(as_dict(mem.get("estimate")))
    return {
        "traces": traces, "unit": "/".join(sorted(u for u in units if u)) or "MiB",
        "x_title": "seconds since the first reading" if x_kind == "time" else "line number in its log",
        "x_kind": x_kind, "left_out": left_out,
        "left_out_note": (f"{left_out} series without timestamps left out (they count log lines, not seconds)"
                          if left_out and x_kind == "time" else ""),
        "series_count": len(parsed), "has_data": bool(parsed),
        "estimate_traces": estimate["traces"], "estimate_has_data": estimate["has_data"],
        "estimate_capacity_gib": estimate["capacity_gib"],
    }


def estimate_bars(est: dict) -> dict:
    """Bars of the estimated total per GPU before and after each fix (GiB), green when it fits."""
    if not isinstance(est.get("total_gib"), (int, float)):
        return {"traces": [], "has_data": False, "capacity_gib": None}
    labels, values, colors, lows, highs = [], [], [], [], []

    def add(label: str, one: dict) -> None:
        total = one.get("total_gib")
        if not isinstance(total, (int, float)):
            return
        spread = one.get("range_gib") if isinstance(one.get("range_gib"), list) else None
        labels.append(label)
        values.append(total)
        colors.append({True: "#15803d", False: "#b91c1c"}.get(one.get("fits"), "#6b7280"))
        lows.append(total - spread[0] if spread else 0)
        highs.append(spread[1] - total if spread else 0)

    add("as run", est)
    for after in as_list(est.get("after_fixes")):
        if isinstance(after, dict):
            add(f"after {text(after.get('kind')).replace('_', ' ') or 'fix'}", after)
    bar = {"type": "bar", "name": "estimated total per GPU (GiB)", "x": labels, "y": values,
           "marker": {"color": colors},
           "hovertemplate": "%{x}: %{y:.1f} GiB<extra></extra>"}
    if any(lows) or any(highs):
        bar["error_y"] = {"type": "data", "symmetric": False, "array": highs, "arrayminus": lows}
    traces = [bar]
    capacity = est.get("capacity_gib") if isinstance(est.get("capacity_gib"), (int, float)) else None
    if capacity is not None and labels:
        traces.append({"type": "scatter", "mode": "lines", "name": f"GPU capacity {capacity:.1f} GiB",
                       "x": [labels[0], labels[-1]], "y": [capacity, capacity],
                       "line": {"color": "#b91c1c", "dash": "dash", "width": 2}})
    return {"traces": traces, "has_data": True, "capacity_gib": capacity}


def _oom_point(data, mem, parsed, failing_rank):
    if text(data.get("category")) != "gpu_oom" or not parsed:
        return None
    candidates = [p for s, p in parsed if as_int(s.get("rank")) == failing_rank] or [p for _, p in parsed]
    return max((points[-1] for points in candidates), key=lambda p: p[0])
