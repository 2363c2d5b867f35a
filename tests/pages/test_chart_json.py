"""Story: the incident page's charts get server-computed, downsampled series."""
import json

from django.urls import reverse

from jobs import timelinechart
from tests.pages.factories import add_artifact, sample_diagnosis, two_rank_log
from triage.memory.downsample import downsample


def test_the_timeline_collapses_identical_ranks_at_256(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5))
    data = alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk])).json()

    labels = [lane["label"] for lane in data["lanes"]]
    assert labels[0] == "▶ rank 137 (first failure)"
    assert data["failing_lane"] == labels[0]
    assert len(labels) < 10  # 256 ranks, a handful of distinct histories
    assert sum(lane["size"] for lane in data["lanes"]) == 256
    assert any(lane["size"] > 200 for lane in data["lanes"])
    names = {trace["name"] for trace in data["traces"]}
    assert {"Start", "Last progress step", "Error", "SIGTERM received", "Exit", "Warning"} <= names
    assert data["x_mode"] == "wall" and data["x_title"].startswith("seconds since the job's first timestamp")
    assert data["first_failure"]["lane"] == labels[0] and "rank 137" in data["first_failure"]["label"]


def test_the_timeline_keeps_every_lane_at_two_ranks(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    data = alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk])).json()
    assert [lane["label"] for lane in data["lanes"]] == ["▶ rank 1 (first failure)", "rank 0 · terminated"]


def test_the_timeline_falls_back_to_steps_then_log_order_without_timestamps():
    diagnosis = sample_diagnosis(2)
    for rank in diagnosis["ranks"]:
        for event in rank["events"]:
            event["t"] = None
    assert timelinechart.timeline(diagnosis)["x_mode"] == "step"  # "step 42/1000" in the progress lines
    for rank in diagnosis["ranks"]:
        for event in rank["events"]:
            event["text"] = event["text"].replace("step 42/1000 ", "")
    data = timelinechart.timeline(diagnosis)
    assert data["x_mode"] == "order" and data["x_title"].startswith("log order")


def test_downsampling_keeps_the_peak():
    points = [(index, 1.0) for index in range(100_000)]
    points[77_777] = (77_777, 99.0)
    kept = downsample(points, 5000)
    assert len(kept) <= 5000
    assert (77_777, 99.0) in kept
    assert kept[-1] == points[-1]


def test_chart_json_is_404_for_another_team(charlie_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    for name in ("jobs:incident_timeline_json", "jobs:incident_memory_json"):
        assert charlie_client.get(reverse(name, args=[incident.pk])).status_code == 404


def test_chart_json_escapes_markup_that_plotly_would_render(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["ranks"][0]["events"][0]["text"] = "<script>alert(1)</script>"
    incident = make_incident(alpha, diagnosis=diagnosis)
    response = alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk]))
    assert response["Content-Type"] == "application/json"
    dumped = json.dumps(response.json())
    # Plotly renders a little HTML (<a>, <b>, <span style>) in hover text: markup from a log is escaped.
    assert "<script>" not in dumped and "&lt;script&gt;alert(1)&lt;/script&gt;" in dumped


def test_timeline_events_link_to_the_log_at_their_line(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    error = next(e for e in diagnosis["ranks"][1]["events"] if e["kind"] == "error")
    error.update(source="log.txt", line=6)
    incident = make_incident(alpha, diagnosis=diagnosis)
    artifact = add_artifact(incident, "log.txt", two_rank_log())
    data = alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk])).json()

    errors = next(trace for trace in data["traces"] if trace["name"] == "Error")
    url = reverse("jobs:artifact_log", args=[incident.pk, artifact.pk]) + "?line=6#L6"
    assert errors["customdata"] == [url]
    assert alice_client.get(url).status_code == 200


def test_512_ranks_with_distinct_texts_still_fit_a_readable_chart():
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
