"""Downsample a series to at most N points, keeping the extremes (min and max of each bucket)."""
from __future__ import annotations


def downsample(points: list[list[float]], max_points: int = 5000) -> list[list[float]]:
    if len(points) <= max_points:
        return points
    buckets = max(max_points // 2, 1)
    size = len(points) / buckets
    out: list[list[float]] = []
    for bucket in range(buckets):
        chunk = points[int(bucket * size) : int((bucket + 1) * size)]
        if not chunk:
            continue
        low = min(chunk, key=lambda p: p[1])
        high = max(chunk, key=lambda p: p[1])
        out.extend(sorted({id(low): low, id(high): high}.values(), key=lambda p: p[0]))
    # The last reading (often the OOM or the crash) ends the curve, whatever its value.
    if out and out[-1] != points[-1]:
        out.append(points[-1])
    if len(out) > max_points:
        out = out[: max_points - 1] + [points[-1]]
    return out
