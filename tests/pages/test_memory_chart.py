"""Story: the memory chart reads on its own: measured curves own the y-axis, one kind of x-axis,
the estimate is a separate bar chart, and the section appears only where memory matters."""
from django.urls import reverse

from jobs import memorychart
from tests.pages.factories import sample_diagnosis


def test_memory_series_are_capped_and_estimates_are_bars_not_lines(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=2000))
    response = alice_client.get(reverse("jobs:incident_memory_json", args=[incident.pk]))
    data = response.json()

    assert len(response.content) < 2_000_000
    assert all(len(trace["x"]) <= memorychart.MAX_POINTS for trace in data["traces"])
    names = [trace["name"] for trace in data["traces"]]
    assert "rank 137 GPU 1 allocated (first failure)" in names
    assert any(name.startswith("max of 256") for name in names)
    assert any(name.startswith("device capacity") for name in names)
    assert "OOM" in names
    assert not any("estimate" in name for name in names)  # the curves' y-axis is theirs alone
    peak = max(max(trace["y"]) for trace in data["traces"] if trace["y"])
    assert peak <= 81_559  # capacity line and curves, nothing taller
    (bar, capacity) = data["estimate_traces"]
    assert bar["type"] == "bar" and bar["x"][:2] == ["as run", "after enable gradient checkpointing"]
    assert bar["y"][:2] == [83.8, 58.2] and bar["marker"]["color"][:2] == ["#b91c1c", "#15803d"]
    assert capacity["y"] == [79.6, 79.6]


def _series(x_kind, points, rank):
    return {"name": f"rank {rank}", "rank": rank, "unit": "MiB", "kind": "gpu_used", "x": x_kind,
            "points": points, "capacity": 81_000}


def test_the_x_axis_is_time_since_start_or_line_never_both():
    epoch = 1_764_500_000.0
    data = {"category": "gpu_oom", "failing_rank": 1, "memory": {"series": [
        _series("time", [[epoch, 100], [epoch + 30, 200]], 0),
        _series("time", [[epoch + 5, 150], [epoch + 60, 300]], 1),
        _series("line", [[12, 90], [4000, 95]], 2),
    ]}}
    chart = memorychart.memory(data)
    xs = [x for trace in chart["traces"] for x in trace["x"]]
    assert chart["x_kind"] == "time" and chart["x_title"] == "seconds since the first reading"
    assert min(xs) == 0 and max(xs) == 60  # seconds since start, not epoch seconds
    assert chart["left_out"] == 1 and "without timestamps" in chart["left_out_note"]
    only_lines = memorychart.memory({"memory": {"series": [_series("line", [[12, 90], [4000, 95]], 0)]}})
    assert only_lines["x_title"] == "line number in its log"


def test_the_memory_section_is_only_for_memory_incidents_or_memory_readings(alice_client, alpha, make_incident):
    oom = sample_diagnosis(256, memory_points=5)
    keyerror = sample_diagnosis(2)  # a KeyError incident: no memory readings, yet a stale estimate
    keyerror["memory"] = {"series": [], "estimate": oom["memory"]["estimate"]}
    assert oom["category"] == "gpu_oom" and keyerror["category"] == "data_schema"
    shown = alice_client.get(reverse("jobs:incident_detail", args=[make_incident(alpha, diagnosis=oom).pk]))
    hidden = alice_client.get(reverse("jobs:incident_detail", args=[make_incident(alpha, diagnosis=keyerror).pk]))
    assert 'id="memory-h"' in shown.content.decode() and "Will it fit?" in shown.content.decode()
    body = hidden.content.decode()
    assert 'id="memory-h"' not in body and "Will it fit?" not in body
    assert memorychart.show_memory(keyerror) is False and memorychart.show_memory(oom) is True
