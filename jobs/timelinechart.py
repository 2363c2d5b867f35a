"""The incident page's timeline in time: ready-to-draw Plotly traces computed on the server.

x is seconds since the job's first timestamp: wall clock where the logs have it, else the
elapsed time tqdm prints, else the training step, else (no clock at all) the order of the lines.
The axis title says which. An event the logs give no time for takes the time of the nearest
timed line of the same file (log lines are written in time order), else its rank's last time.

Ranks with identical histories share a lane (512 ranks stay readable); the first failing rank
always has its own. The first failure is marked and labelled, the cascade after it shaded,
each lane's last progress marked (a rank that stopped early is called out as a straggler).
Every text is HTML-escaped: Plotly renders a subset of HTML in hover text and labels.
"""
from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from jobs.presenters import as_dict, as_int, as_list, rank_ranges, text

MAX_POINTS = 5000
MAX_LANE_EVENTS = 200
MAX_LANES = 48
HOVER_CHARS = 300

# Event kinds worth a marker, in legend order; anything else is drawn as "other".
EVENT_STYLE = {
    "start": ("Start", "circle-open", "#6b7280"),
    "progress": ("Progress", "diamond-open", "#60a5fa"),
    "last_progress": ("Last progress step", "diamond", "#2563eb"),
    "warning": ("Warning", "triangle-up", "#d97706"),
    "error": ("Error", "x", "#dc2626"),
    "exception": ("Exception", "x-thin-open", "#b91c1c"),
    "cascade": ("Cascade (after the first failure)", "star-triangle-down", "#db2777"),
    "oom": ("Out of memory", "x", "#dc2626"),
    "timeout": ("Timeout", "hourglass", "#7c3aed"),
    "sigterm": ("SIGTERM received", "square", "#7c3aed"),
    "sigkill": ("SIGKILL", "square-x", "#7c3aed"),
    "exit": ("Exit", "line-ns-open", "#64748b"),
}
OTHER_STYLE = ("Other", "circle", "#6b7280")
KIND_ALIASES = {"started": "start", "step": "progress", "first_error": "error", "traceback": "exception",
                "signal": "sigterm", "killed": "sigkill"}
FAILURE_KINDS = ("exception", "error", "oom", "timeout", "sigkill")
PROGRESS_KINDS = ("progress", "last_progress")
X_TITLES = {
    "wall": "seconds since the job's first timestamp (wall clock from the logs)",
    "elapsed": "seconds of training (tqdm elapsed time; the logs carry no wall clock)",
    "step": "training step (the logs carry no timestamps)",
    "order": "log order (the logs carry no timestamps or steps)",
}
X_TITLES_SHORT = {
    "wall": "s since the first timestamp (wall clock)",
    "elapsed": "s of training (tqdm elapsed)",
    "step": "training step",
    "order": "log order (no timestamps)",
}
_TQDM_ELAPSED = re.compile(r"\[(?:(\d+):)?(\d{1,2}):(\d\d)<")
_STEP = re.compile(r"(\d+)/(\d+) \[|\bstep[ =:]+(\d+)", re.IGNORECASE)


def escape(value: str) -> str:
    """Hover text and labels are data: < > & never reach Plotly as markup."""
    return html.escape(value, quote=False)


def _kind(raw) -> str:
    kind = text(raw).lower()
    return KIND_ALIASES.get(kind, kind)


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _events(rank: dict) -> list[dict]:
    events = []
    for event in as_list(rank.get("events")):
        if isinstance(event, dict):
            events.append({"t": _number(event.get("t")), "seq": as_int(event.get("seq")),
                           "kind": _kind(event.get("kind")), "text": text(event.get("text"))[:HOVER_CHARS],
                           "source": text(event.get("source")), "line": as_int(event.get("line"))})
    return events


def _elapsed(event: dict):
    match = _TQDM_ELAPSED.search(event["text"]) if event["kind"] in PROGRESS_KINDS else None
    if not match:
        return None
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def _step(event: dict):
    match = _STEP.search(event["text"]) if event["kind"] in PROGRESS_KINDS else None
    if not match:
        return None
    return int(match.group(1) or match.group(3))


def _drop_late_starts(events: list[dict]) -> list[dict]:
    """'started' is the first line the scanner kept; after another event of its file it marks nothing."""
    first_line = {}
    for event in events:
        if event["kind"] != "start" and event["source"] and event["line"]:
            first_line[event["source"]] = min(first_line.get(event["source"], event["line"]), event["line"])
    return [e for e in events if not (e["kind"] == "start" and e["line"] and e["line"] > first_line.get(e["source"], e["line"]))]


def _choose_clock(per_rank) -> tuple[str, object]:
    """The x mode and a function event -> known x (or None)."""
    events = [e for _, _, evs in per_rank for e in evs]
    if len({e["t"] for e in events if e["t"] is not None}) >= 2:
        return "wall", lambda e: e["t"]
    if sum(1 for e in events if _elapsed(e) is not None) >= 2:
        return "elapsed", _elapsed
    if sum(1 for e in events if _step(e) is not None) >= 2:
        return "step", _step
    return "order", None


def _place(per_rank, mode: str, known) -> None:
    """Give every event an x; events without one take the nearest timed line of their file."""
    events = [e for _, _, evs in per_rank for e in evs]
    if mode == "order":
        order = {seq: index for index, seq in enumerate(sorted({e["seq"] for e in events if e["seq"] is not None}))}
        for _, _, evs in per_rank:
            for position, event in enumerate(evs):
                event["x"] = order.get(event["seq"], position)
                event["approx"] = False
        return
    timed_lines: dict[str, list[tuple[int, float]]] = {}
    for event in events:
        event["x"] = known(event)
        event["approx"] = False
        if event["x"] is not None and event["source"] and event["line"]:
            timed_lines.setdefault(event["source"], []).append((event["line"], event["x"]))
    for _, _, evs in per_rank:
        for event in evs:
            if event["x"] is None and event["source"] and event["line"] and event["source"] in timed_lines:
                event["x"] = min(timed_lines[event["source"]],
                                 key=lambda item: (abs(item[0] - event["line"]), -item[0]))[1]
                event["approx"] = True
        own = [e["x"] for e in evs if e["x"] is not None]
        for event in evs:
            if event["x"] is None:
                event["x"], event["approx"] = (max(own) if own else None), True


def _thin(events: list[dict]) -> list[dict]:
    """Keep every event that matters; sample repeated progress and warnings down to a lane budget."""
    if len(events) <= MAX_LANE_EVENTS:
        return events
    keep = [e for e in events if e["kind"] not in ("progress", "warning")]
    rest = [e for e in events if e["kind"] in ("progress", "warning")]
    step = max(1, len(rest) // max(1, MAX_LANE_EVENTS - len(keep)))
    return sorted(keep[:MAX_LANE_EVENTS] + rest[::step][: max(0, MAX_LANE_EVENTS - len(keep))],
                  key=lambda e: (e["x"] if e["x"] is not None else 0))


def _group_ranks(per_rank, failing_rank, *, with_text: bool) -> dict:
    groups: dict = {}
    for number, rank, events in per_rank:
        if number is not None and number == failing_rank:
            signature = ("failing", number)
        else:
            history = tuple(sorted((e["kind"], "".join(c for c in e["text"] if not c.isdigit())[:80]
                                    if with_text else "") for e in events))
            # The last step stays in the signature: a rank that stopped early must keep its own lane.
            signature = (text(rank.get("status")), as_int(rank.get("exit_code")), history,
                         as_int(rank.get("last_step")) if with_text else None)
        groups.setdefault(signature, []).append((number, rank, events))
    return groups


def _first_failure(data: dict, per_rank, failing_rank):
    """The event that decided the verdict: the root cause's line on the failing rank, else its first failure."""
    root = as_dict(data.get("root_cause"))
    lines = {(text(item.get("source")), as_int(item.get("line")))
             for item in as_list(root.get("evidence")) + as_list(data.get("evidence"))[:1] if isinstance(item, dict)}
    candidates = [e for number, _, evs in per_rank if number == failing_rank for e in evs] if failing_rank is not None \
        else [e for _, _, evs in per_rank for e in evs]
    failures = [e for e in candidates if e["kind"] in FAILURE_KINDS and e["x"] is not None]
    exact = [e for e in failures if (e["source"], e["line"]) in lines]
    pool = exact or failures
    if not pool:
        return None
    # Among the deciding lines, the earliest; an exception line beats the error hit on the same line.
    return min(pool, key=lambda e: (e["x"], e["kind"] != "exception", e["line"] or 0))


def timeline(data: dict, link=None) -> dict:
    """Plotly traces for the swimlanes; link(source, line, rank) gives a log viewer URL for an event."""
    ranks = [r for r in as_list(data.get("ranks")) if isinstance(r, dict)]
    failing_rank = as_int(data.get("failing_rank"))
    per_rank = [(as_int(r.get("rank")), r, _drop_late_starts(_events(r))) for r in ranks]
    mode, known = _choose_clock(per_rank)
    _place(per_rank, mode, known)
    xs = [e["x"] for _, _, evs in per_rank for e in evs if e["x"] is not None]
    origin = min(xs) if xs and mode == "wall" else 0
    for _, _, evs in per_rank:
        for event in evs:
            if event["x"] is not None:
                event["x"] = round(event["x"] - origin, 3)
    first = _first_failure(data, per_rank, failing_rank)

    groups = _group_ranks(per_rank, failing_rank, with_text=True)
    if len(groups) > MAX_LANES:
        groups = _group_ranks(per_rank, failing_rank, with_text=False)
    if len(groups) > MAX_LANES:  # still too many: one lane per status beyond the budget
        kept = dict(list(groups.items())[: MAX_LANES - 1])
        spill = [member for key, members in list(groups.items())[MAX_LANES - 1:] for member in members]
        groups = {**kept, ("other",): spill}

    lanes = []
    for members in groups.values():
        numbers = [m[0] for m in members]
        number, rank, events = members[0]
        is_failing = failing_rank is not None and number == failing_rank
        label = (f"rank {number}" if number is not None else "rank ?") if len(members) == 1 else \
            f"ranks {rank_ranges(numbers)} ({len(members)})"
        if is_failing:
            label = f"▶ {label} (first failure)"
        elif lane_status := text(rank.get("status")):
            label = f"{label} · {escape(lane_status)}"
        progress = [e for e in events if e["kind"] in PROGRESS_KINDS and e["x"] is not None]
        lanes.append({"label": label, "ranks": numbers, "size": len(members), "failing": is_failing,
                      "status": text(rank.get("status")), "exit_code": as_int(rank.get("exit_code")),
                      "last_step": as_int(rank.get("last_step")) if rank.get("last_step") is not None
                      else (_step(max(progress, key=lambda e: e["x"])) if progress else None),
                      "last_progress": max(progress, key=lambda e: e["x"]) if progress else None,
                      "events": _thin(events), "order": min([n for n in numbers if n is not None] or [0])})
    lanes.sort(key=lambda lane: (not lane["failing"], lane["order"]))
    _mark_stragglers(lanes)

    traces_by_kind: dict = {}
    line_x, line_y = [], []
    for lane in lanes:
        lane_xs = []
        for event in lane["events"]:
            if event["x"] is None:
                continue
            kind = event["kind"]
            lane_xs.append(event["x"])
            if kind == "last_progress":  # drawn once per lane below, from the lane's latest progress
                continue
            trace = traces_by_kind.setdefault(kind, {"x": [], "y": [], "text": [], "url": []})
            if len(trace["x"]) >= MAX_POINTS:
                continue
            trace["x"].append(event["x"])
            trace["y"].append(lane["label"])
            trace["text"].append(_hover(event))
            url = link(event["source"], event["line"], lane["ranks"][0]) if link and event["line"] else None
            trace["url"].append(url or "")
        # Every lane is drawn, even one with no timed event: a rank that said nothing is news too.
        line_x += [min(lane_xs, default=0), max(lane_xs, default=0), None]
        line_y += [lane["label"], lane["label"], None]

    traces = [{"type": "scatter", "mode": "lines+markers", "name": "lifetime", "x": line_x[: 3 * MAX_LANES],
               "y": line_y[: 3 * MAX_LANES], "hoverinfo": "skip", "showlegend": False,
               "marker": {"size": 1, "opacity": 0}, "line": {"color": "rgba(148,163,184,0.45)", "width": 6}}]
    ordered = [k for k in EVENT_STYLE if k in traces_by_kind] + sorted(k for k in traces_by_kind if k not in EVENT_STYLE)
    for kind in ordered:
        name, symbol, color = EVENT_STYLE.get(kind, OTHER_STYLE)
        if kind not in EVENT_STYLE:
            name = escape(kind or "other")
        trace = traces_by_kind[kind]
        traces.append(_markers(name, trace, symbol, color, size=10))
    last = [lane for lane in lanes if lane["last_progress"] is not None]
    if last:
        traces.append(_markers("Last progress step", {
            "x": [lane["last_progress"]["x"] for lane in last], "y": [lane["label"] for lane in last],
            "text": [_hover(lane["last_progress"], prefix="last progress" + (
                f" (step {lane['last_step']})" if lane["last_step"] is not None else "")) for lane in last],
            "url": [(link(lane["last_progress"]["source"], lane["last_progress"]["line"], lane["ranks"][0]) or "")
                    if link and lane["last_progress"]["line"] else "" for lane in last],
        }, "diamond", "#2563eb", size=13))

    failing_lane = next((lane for lane in lanes if lane["failing"]), None)
    first_failure = None
    if first is not None:
        lane_label = failing_lane["label"] if failing_lane else next(
            (lane["label"] for lane in lanes if first in lane["events"]), lanes[0]["label"] if lanes else "")
        rank_name = f"rank {failing_rank}" if failing_rank is not None else "first failure"
        url = (link(first["source"], first["line"], failing_rank) or "") if link and first["line"] else ""
        first_failure = {"x": first["x"], "lane": lane_label, "label": escape(f"First failure: {rank_name}"),
                         "text": _hover(first), "url": url, "approx": first["approx"]}
        traces.append({"type": "scatter", "mode": "markers", "name": "First failure", "x": [first["x"]],
                       "y": [lane_label], "text": [first_failure["text"]], "customdata": [url],
                       "hovertemplate": "<b>First failure</b><br>%{y}<br>%{text}<extra></extra>",
                       "marker": {"symbol": "x", "size": 20, "color": "#dc2626",
                                  "line": {"width": 3, "color": "#7f1d1d"}}})
    end = max([e["x"] for lane in lanes for e in lane["events"] if e["x"] is not None] or [0])
    start_iso = None
    if mode == "wall" and xs:
        start_iso = datetime.fromtimestamp(origin, UTC).isoformat() if origin > 1e8 else None
    return {
        "x_mode": mode,
        "x_title": X_TITLES[mode],
        "x_title_short": X_TITLES_SHORT[mode],
        "start": start_iso,
        "end": end,
        "lanes": [{k: lane[k] for k in ("label", "ranks", "size", "failing", "status", "exit_code", "last_step",
                                        "straggler")} for lane in lanes],
        "traces": traces,
        "failing_lane": failing_lane["label"] if failing_lane else None,
        "first_failure": first_failure,
        "cascade": {"x0": first["x"], "x1": end} if first is not None and end > first["x"] else None,
        "rank_count": len(per_rank),
    }


def _mark_stragglers(lanes: list[dict]) -> None:
    """A lane whose last progress came well before the others' stopped early: say so in its label."""
    steps = [lane["last_step"] for lane in lanes if lane["last_step"] is not None]
    times = [lane["last_progress"]["x"] for lane in lanes if lane["last_progress"] is not None]
    for lane in lanes:
        lane["straggler"] = False
        if len(lanes) < 2 or lane["failing"]:  # the failing rank stopping first is the story already told
            continue
        if lane["last_step"] is not None and len(steps) > 1 and lane["last_step"] < max(steps):
            lane["straggler"] = True
        elif lane["last_progress"] is not None and len(times) > 1 and max(times) - min(times) > 0:
            spread = max(times) - min(times)
            lane["straggler"] = lane["last_progress"]["x"] < max(times) - max(60.0, 0.25 * spread)
        if lane["straggler"]:
            lane["label"] += (f" · stopped at step {lane['last_step']}" if lane["last_step"] is not None
                              else " · stopped early")


def _hover(event: dict, prefix: str = "") -> str:
    where = f"{event['source']}:{event['line']}" if event["source"] and event["line"] else ""
    head = " · ".join(part for part in (prefix, where, "time inferred from nearby lines" if event["approx"] else "")
                      if part)
    body = escape(event["text"][:HOVER_CHARS])
    return (escape(head) + "<br>" + body) if head else body


def _markers(name: str, trace: dict, symbol: str, color: str, *, size: int) -> dict:
    return {"type": "scatter", "mode": "markers", "name": name, "x": trace["x"], "y": trace["y"],
            "text": trace["text"], "customdata": trace["url"],
            "hovertemplate": "%{y}<br>%{text}<extra>" + name + "</extra>",
            "marker": {"symbol": symbol, "size": size, "color": color, "line": {"width": 2, "color": color}}}
