"""Story: the incident page's timeline is in time: seconds since the first timestamp, else tqdm time or steps."""
import json

from django.urls import reverse

from jobs import timelinechart
from tests.pages.factories import sample_diagnosis


def test_without_a_wall_clock_the_timeline_uses_tqdm_time_then_steps_then_log_order():
    diagnosis = sample_diagnosis(2)
    for rank in diagnosis["ranks"]:
        for event in rank["events"]:
            event["t"] = None
    data = timelinechart.timeline(diagnosis)
    assert data["x_mode"] == "step" and data["x_title"].startswith("training step")

    for rank in diagnosis["ranks"]:
        for event in rank["events"]:
            if event["kind"] == "last_progress":
                event["text"] = f"{event['text'][:8]} 41/1000 [01:{rank['rank'] + 10:02d}<30:00, 1.2it/s]"
    data = timelinechart.timeline(diagnosis)
    assert data["x_mode"] == "elapsed" and "tqdm" in data["x_title"]
    progress = next(trace for trace in data["traces"] if trace["name"] == "Last progress step")
    assert sorted(progress["x"]) == [70, 71]

    for rank in diagnosis["ranks"]:
        for event in rank["events"]:
            event["text"] = "no clock here"
    assert timelinechart.timeline(diagnosis)["x_title"].startswith("log order")


def test_a_rank_that_stopped_early_keeps_its_own_lane_and_says_so():
    diagnosis = sample_diagnosis(256, memory_points=5)
    diagnosis["ranks"][40]["last_step"] = 30
    data = timelinechart.timeline(diagnosis)
    lane = next(lane for lane in data["lanes"] if lane["ranks"] == [40])
    assert lane["straggler"] and "stopped at step 30" in lane["label"]


def test_chart_json_escapes_markup_from_the_logs(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["ranks"][0]["events"][0]["text"] = "<img src=x onerror=alert(1)> & <b>bold</b>"
    incident = make_incident(alpha, diagnosis=diagnosis)
    response = alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk]))
    assert response["Content-Type"] == "application/json"
    dumped = json.dumps(response.json())
    # Plotly renders a subset of HTML in hover text: a log line reaches it escaped, never as markup.
    assert "<img" not in dumped and "<b>bold" not in dumped
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in dumped


def test_512_ranks_fit_a_readable_timeline_in_time():
    diagnosis = sample_diagnosis(256, memory_points=5)
    extra = sample_diagnosis(256, memory_points=5)["ranks"]
    for rank in extra:
        rank["rank"] += 256
    diagnosis["ranks"] += extra
    for rank in diagnosis["ranks"]:
        rank["events"][0]["text"] = f"host-{chr(97 + rank['rank'] % 26)}{chr(97 + rank['rank'] // 26 % 26)} starting"
    data = timelinechart.timeline(diagnosis)
    assert data["rank_count"] == 512
    assert len(data["lanes"]) <= timelinechart.MAX_LANES
    assert sum(lane["size"] for lane in data["lanes"]) == 512
    assert all(len(trace["x"]) <= timelinechart.MAX_POINTS for trace in data["traces"])
