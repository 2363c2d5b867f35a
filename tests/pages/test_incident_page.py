"""Story: alice opens an incident at 3 a.m. and reads why the job died."""
import re

import pytest
from django.urls import reverse

from jobs.models import Diagnosis, Incident
from tests.pages.factories import ORIGINAL_COMMAND, add_artifact, node_log, sample_diagnosis, two_rank_log


def detail(incident):
    return reverse("jobs:incident_detail", args=[incident.pk])


def test_it_shows_the_verdict_card(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2), command="torchrun --nproc_per_node=2 train_tiny.py")
    body = alice_client.get(detail(incident)).content.decode()
    verdict = body[body.index('id="verdict"'):body.index('id="evidence"')]
    assert "data_schema" in verdict
    assert "KeyError" in verdict and "&#x27;conversations&#x27;" in verdict
    assert "rank 1" in verdict
    assert "92% confident" in verdict
    assert "names rank 0, but rank 1 failed first" in verdict


def test_it_reads_evidence_context_from_the_stored_log(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    artifact = add_artifact(incident, "log.txt", two_rank_log())
    body = alice_client.get(detail(incident)).content.decode()
    evidence = body[body.index('id="evidence"'):body.index('id="timeline-h"')]
    assert "line 6" in evidence
    assert "Traceback (most recent call last)" in evidence  # context line 4, not in the diagnosis itself
    assert re.search(r'class="ln hit"><span class="no">6</span>', evidence)
    assert reverse("jobs:artifact_log", args=[incident.pk, artifact.pk]) + "?line=6" in evidence
    assert "rank=1" in evidence


def test_it_shows_fixes_with_a_diff_against_the_original_command(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5), command=ORIGINAL_COMMAND)
    body = alice_client.get(detail(incident)).content.decode()
    fixes = body[body.index('id="fixes"'):]
    assert "enable_gradient_checkpointing" in fixes
    diff = fixes[fixes.index('class="diff-text"'):]
    added = re.findall(r"<ins>(.*?)</ins>", diff)
    removed = re.findall(r"<del>(.*?)</del>", diff)
    assert added[0].startswith("+") and added[0].endswith("--gradient_checkpointing True")  # a whole line
    assert any("--per_device_train_batch_size 8" in line for line in removed)  # per-device batch 8 -> 4
    assert "PYTORCH_CUDA_ALLOC_CONF" in fixes
    assert 'data-copy-target="fix-0-command"' in fixes
    assert "verified by a reproduction" in fixes


def test_it_shows_the_memory_estimate_and_the_raw_json(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5))
    body = alice_client.get(detail(incident)).content.decode()
    assert "83.8 GiB" in body and "58.2 GiB" in body and "does not fit" in body
    assert "&quot;fingerprint&quot;: &quot;5b8e7f6a1c2d3e4f&quot;" in body
    assert reverse("jobs:incident_timeline_json", args=[incident.pk]) in body
    assert "vendor/plotly.min.js" in body and "cdn" not in body.lower()


def test_it_lists_artifacts_with_download_links(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    artifact = add_artifact(incident, "log.txt", two_rank_log())
    body = alice_client.get(detail(incident)).content.decode()
    assert reverse("jobs:artifact_download", args=[incident.pk, artifact.pk]) in body


def test_another_teams_incident_is_404(charlie_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    assert charlie_client.get(detail(incident)).status_code == 404


def test_bob_sees_his_teammates_incident(client, bob, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    client.force_login(bob)
    assert client.get(detail(incident)).status_code == 200


def test_it_requires_login(client, alpha, make_incident):
    incident = make_incident(alpha)
    assert client.get(detail(incident)).status_code == 302


def test_a_queued_incident_shows_live_progress(alice_client, alpha, make_incident):
    incident = make_incident(alpha)
    body = alice_client.get(detail(incident)).content.decode()
    assert 'id="progress"' in body
    assert reverse("jobs:incident_status", args=[incident.pk]) in body
    assert "js/incident_status.js" in body
    assert 'id="verdict"' not in body


def test_a_failed_diagnosis_says_why(alice_client, alpha, make_incident):
    incident = make_incident(alpha)
    Incident.objects.filter(pk=incident.pk).update(status="failed", status_reason="archive is corrupt")
    body = alice_client.get(detail(incident)).content.decode()
    assert "archive is corrupt" in body and 'id="progress"' not in body


def test_it_escapes_log_text_file_names_and_commands(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["summary"] = "<script>alert('summary')</script>"
    diagnosis["root_cause"]["message"] = "<script>alert('message')</script>"
    diagnosis["root_cause"]["evidence"] = [
        {"source": "<script>x</script>.log", "line": 2, "text": "<script>alert('evidence')</script>"}]
    diagnosis["fixes"][0]["command"] = "torchrun train.py --x '<script>alert(1)</script>'"
    diagnosis["fixes"][0]["env"] = {"A": "javascript:alert(1)"}
    incident = make_incident(alpha, diagnosis=diagnosis, command="<script>alert('cmd')</script>",
                             job_id="<b>job</b>")
    add_artifact(incident, "<script>x</script>.log", "line one\n<script>alert('log')</script>\nline three\n")
    body = alice_client.get(detail(incident)).content.decode()
    assert "<script>alert" not in body
    assert "<script>x</script>" not in body
    assert "<b>job</b>" not in body
    assert "&lt;script&gt;alert(&#x27;log&#x27;)&lt;/script&gt;" in body  # the context line, read from the file
    assert 'href="javascript:' not in body


@pytest.mark.parametrize("data", [
    {},
    {"category": None, "root_cause": None, "ranks": None, "fixes": None, "memory": None, "confidence": None},
    {"root_cause": {"evidence": [None, "text", {"line": "x"}], "frames": [None]}, "ranks": [None, {"events": [None]}],
     "fixes": [None, {"env": None, "changes": "raw"}, {"changes": {"a": 1}}], "memory": {"series": [None, {"points": [[1]]}],
     "estimate": {"after_fixes": [None]}}, "launcher_verdict_wrong": "rank 0 only timed out"},
])
def test_it_renders_thin_or_odd_diagnoses(alice_client, alpha, make_incident, data):
    incident = make_incident(alpha, diagnosis={"category": "unknown"})
    Diagnosis.objects.filter(incident=incident).update(data=data)
    assert alice_client.get(detail(incident)).status_code == 200
    assert alice_client.get(reverse("jobs:incident_timeline_json", args=[incident.pk])).status_code == 200
    assert alice_client.get(reverse("jobs:incident_memory_json", args=[incident.pk])).status_code == 200


def test_a_256_rank_incident_page_stays_small(alice_client, alpha, make_incident, django_assert_max_num_queries):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(256), command=ORIGINAL_COMMAND)
    add_artifact(incident, "node17.log", node_log())
    with django_assert_max_num_queries(8):
        response = alice_client.get(detail(incident))
    assert response.status_code == 200
    assert len(response.content) < 2_000_000
    body = response.content.decode()
    assert "rank 137" in body
    assert 'id="raw-json"' in body
    assert "OutOfMemoryError" in body


def test_evidence_links_to_the_rank_that_printed_the_line(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["evidence"] = [
        {"source": "log.txt", "line": 6, "text": "[default1]:[rank1]: KeyError: 'conversations'"},
        {"source": "log.txt", "line": 7, "text": "[default0]:[rank0]: step 3/5 loss=2.1"},
        {"source": "log.txt", "line": 6, "text": "duplicate of the first"},
    ]
    incident = make_incident(alpha, diagnosis=diagnosis)
    add_artifact(incident, "log.txt", two_rank_log())
    items = alice_client.get(detail(incident)).context["evidence"]
    # Line 7 sits inside line 6's context window: highlighted there, not shown a second time.
    assert [(item["line"], item["rank"]) for item in items] == [(6, 1)]
    assert items[0]["hits"] == {6, 7}
    assert [number for number, _ in items[0]["context"]] == [3, 4, 5, 6, 7, 8, 9]
    assert items[0]["rank_link"]  # a combined log: filtering by rank finds the line


def test_the_raw_json_block_is_valid_json(alice_client, alpha, make_incident):
    import html
    import json
    import re as regex

    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    body = alice_client.get(detail(incident)).content.decode()
    block = regex.search(r'<pre class="raw-json" id="raw-json" tabindex="0">(.*?)</pre>', body, regex.S).group(1)
    shown = json.loads(html.unescape(block))
    assert shown["failing_rank"] == 1 and shown["memory"]["series"] == "left out: see the API"


def test_it_shows_the_steps_to_run_first_the_corrected_config_and_notes_escaped(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["fixes"] = [{
        "kind": "convert_data_format", "title": "Convert the data", "why": "alpaca rows, sharegpt loader",
        "command": None, "env": {}, "verified": None,
        "shell": ["python -m triage convert-data --to sharegpt data.json data.sharegpt.json <b>"],
        "changes": [{"where": "script", "flag": "--data_path", "old": "data.json", "new": "data.sharegpt.json"}],
        "config": {"train_batch_size": 32, "note": "<script>alert(1)</script>"},
        "notes": ["global batch kept: 8 x 1 x 4 = 2 x 4 x 4 = 32"],
    }]
    incident = make_incident(alpha, diagnosis=diagnosis)
    body = alice_client.get(detail(incident)).content.decode()
    fixes = body[body.index('id="fixes"'):]
    assert "convert-data --to sharegpt data.json data.sharegpt.json &lt;b&gt;" in fixes
    assert 'data-copy-target="fix-0-shell"' in fixes and 'data-copy-target="fix-0-config"' in fixes
    assert "<code>--data_path</code>" in fixes and "<ins>data.sharegpt.json</ins>" in fixes
    assert "&quot;train_batch_size&quot;: 32" in fixes and "<script>alert(1)" not in fixes
    assert "global batch kept: 8 x 1 x 4 = 2 x 4 x 4 = 32" in fixes
