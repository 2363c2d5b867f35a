"""Chart series computed on the server (STYLE.md rule 12).

The browser gets ready-to-draw Plotly traces: ranks with identical histories are
collapsed into one swimlane. The memory chart's series live in jobs/memorychart.py.
"""
from __future__ import annotations

import html

from jobs.presenters import as_int, as_list, rank_ranges, text
from triage.memory.downsample import downsample  # noqa: F401  (re-exported: tests and callers use it here)

MAX_POINTS = 5000
TOTAL_POINT_BUDGET = 60_000


def _plain(value: str) -> str:
    """Text from a log shown by Plotly, which renders a little HTML (<a>, <b>, <span style>) in
    hover text and trace names: escape the markup so that it shows as typed."""
    return html.escape(value, quote=False)
MAX_LANE_EVENTS = 200
MAX_LANES = 48

# Event kinds worth a marker, in legend order; anything else is drawn as "other".
EVENT_STYLE = {
    "start": ("Start", "circle-open", "#4b5563"),
    "progress": ("Progress", "diamond-open", "#93c5fd"),
    "last_progress": ("Last progress step", "diamond", "#2563eb"),
    "warning": ("Warning", "triangle-up", "#b45309"),
    "error": ("Error", "x", "#b91c1c"),
    "exception": ("Exception", "x-thin-open", "#991b1b"),
    "cascade": ("Cascade (after the first failure)", "star-triangle-down", "#be185d"),
    "oom": ("Out of memory", "x", "#b91c1c"),
    "timeout": ("Timeout", "hourglass", "#7c3aed"),
    "sigterm": ("SIGTERM received", "square", "#7c3aed"),
    "sigkill": ("SIGKILL", "square-x", "#7c3aed"),
    "exit": ("Exit", "line-ns-open", "#111827"),
}
OTHER_STYLE = ("Other", "circle", "#6b7280")
KIND_ALIASES = {"started": "start", "step": "progress", "first_error": "error", "traceback": "exception",
                "signal": "sigterm", "killed": "sigkill"}


def _kind(raw) -> str:
    kind = text(raw).lower()
    return KIND_ALIASES.get(kind, kind)


def _events(rank: dict) -> list[dict]:
    events = []
    for event in as_list(rank.get("events")):
        if isinstance(event, dict):
            events.append({"t": event.get("t"), "seq": as_int(event.get("seq")),
                           "kind": _kind(event.get("kind")), "text": _plain(text(event.get("text"))[:300]),
                           "source": text(event.get("source")), "line": as_int(event.get("line"))})
    return events


def _thin(events: list[dict]) -> list[dict]:
    """Keep every event that matters once; sample repeated progress/warnings down to a lane budget."""
    if len(events) <= MAX_LANE_EVENTS:
        return events
    keep, seen = [], set()
    for index, event in enumerate(events):
        first_of_kind = event["kind"] not in seen
        seen.add(event["kind"])
        is_last = index == len(events) - 1
        last_progress = event["kind"] == "progress" and not any(
            e["kind"] == "progress" for e in events[index + 1:index + 50])
        if first_of_kind or is_last or last_progress or event["kind"] not in {"progress", "warning"}:
            keep.append(event)
    step = max(1, len(events) // MAX_LANE_EVENTS)
    extra = [e for e in events[::step] if e not in keep]
    merged = keep + extra[: max(0, MAX_LANE_EVENTS - len(keep))]
    return sorted(merged, key=lambda e: (e["seq"] if e["seq"] is not None else 0))


def _group_ranks(per_rank, failing_rank, *, with_text: bool) -> dict:
    groups: dict = {}
    for number, rank, events in per_rank:
        if number is not None and number == failing_rank:
            signature = ("failing", number)
        else:
            history = tuple((e["kind"], "".join(c for c in e["text"] if not c.isdigit())[:80] if with_text else "")
                            for e in events)
            signature = (text(rank.get("status")), as_int(rank.get("exit_code")), history)
        groups.setdefault(signature, []).append((number, rank, events))
    return groups


def timeline(data: dict, link=None) -> dict:
    """Plotly traces for the swimlanes; link(source, line, rank) gives a log viewer URL for an event."""
    ranks = [r for r in as_list(data.get("ranks")) if isinstance(r, dict)]
    failing_rank = as_int(data.get("failing_rank"))
    per_rank = [(as_int(r.get("rank")), r, _events(r)) for r in ranks]
    all_events = [e for _, _, events in per_rank for e in events]
    use_time = bool(all_events) and all(
        isinstance(e["t"], (int, float)) and not isinstance(e["t"], bool) for e in all_events)
    # Without timestamps everywhere, x is the order of the events in the logs (seq values can jump by 1e9).
    order = {seq: index for index, seq in enumerate(sorted({e["seq"] for e in all_events if e["seq"] is not None}))}

    # Ranks whose histories are identical (same status, exit code, event kinds and texts
    # with digits ignored) share a lane; the first failing rank always has its own.
    groups = _group_ranks(per_rank, failing_rank, with_text=True)
    if len(groups) > MAX_LANES:
        # Still too many lanes to read: group by the shape of the history alone (kinds, status, exit).
        groups = _group_ranks(per_rank, failing_rank, with_text=False)

    lanes = []
    for members in groups.values():
        numbers = [m[0] for m in members]
        number, rank, events = members[0]
        is_failing = failing_rank is not None and number == failing_rank
        if len(members) == 1:
            label = f"rank {number}" if number is not None else "rank ?"
        else:
            label = f"ranks {rank_ranges(numbers)} ({len(members)})"
        if is_failing:
            label = f"▶ {label} (first failure)"
        elif lane_status := text(rank.get("status")):
            label = f"{label} · {lane_status}"
        lanes.append({"label": label, "ranks": numbers, "size": len(members), "failing": is_failing,
                      "status": text(rank.get("status")), "exit_code": as_int(rank.get("exit_code")),
                      "events": _thin(events), "order": min([n for n in numbers if n is not None] or [0])})
    lanes.sort(key=lambda lane: (not lane["failing"], lane["order"]))

    traces_by_kind: dict = {}
    line_x, line_y = [], []
    for lane in lanes:
        xs = []
        for position, event in enumerate(lane["events"]):
            x = event["t"] if use_time else order.get(event["seq"], position)
            xs.append(x)
            trace = traces_by_kind.setdefault(event["kind"], {"x": [], "y": [], "text": [], "url": []})
            if len(trace["x"]) >= MAX_POINTS:
                continue
            trace["x"].append(x)
            trace["y"].append(lane["label"])
            trace["text"].append(event["text"])
            url = link(event["source"], event["line"], lane["ranks"][0]) if link and event["line"] else None
            trace["url"].append(url or "")
        if xs:
            line_x += [min(xs), max(xs), None]
            line_y += [lane["label"], lane["label"], None]

    traces = [{"type": "scatter", "mode": "lines", "name": "lifetime", "x": line_x[:MAX_POINTS],
               "y": line_y[:MAX_POINTS], "hoverinfo": "skip", "showlegend": False,
               "line": {"color": "#cbd5e1", "width": 6}}]
    ordered = [k for k in EVENT_STYLE if k in traces_by_kind] + sorted(k for k in traces_by_kind if k not in EVENT_STYLE)
    for kind in ordered:
        name, symbol, color = EVENT_STYLE.get(kind, OTHER_STYLE)
        if kind not in EVENT_STYLE:
            name = kind or "other"
        trace = traces_by_kind[kind]
        traces.append({"type": "scatter", "mode": "markers", "name": name, "x": trace["x"], "y": trace["y"],
                       "text": trace["text"], "customdata": trace["url"],
                       "hovertemplate": "%{y}<br>%{text}<extra>" + name + "</extra>",
                       "marker": {"symbol": symbol, "size": 11, "color": color, "line": {"width": 2, "color": color}}})
    return {
        "x_title": "time (s)" if use_time else "log order (event sequence)",
        "lanes": [{k: lane[k] for k in ("label", "ranks", "size", "failing", "status", "exit_code")} for lane in lanes],
        "traces": traces,
        "failing_lane": next((lane["label"] for lane in lanes if lane["failing"]), None),
        "rank_count": len(per_rank),
    }
