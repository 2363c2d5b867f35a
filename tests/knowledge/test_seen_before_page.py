"""Story: bob's job dies the way alice's did last week; his incident page shows what fixed it."""
import datetime

import pytest
from django.urls import reverse

from knowledge.models import Problem, Runbook

pytestmark = pytest.mark.django_db


def verdict_card(response) -> str:
    body = response.content.decode()
    return body[body.index('id="verdict"'):body.index("</section>", body.index('id="verdict"'))]


def test_it_shows_the_past_resolution_on_a_later_incident(alice, bob_client, alpha, recorded_incident):
    recorded_incident(alpha)
    Problem.objects.update(
        status="resolved", resolution="Convert the data to **ShareGPT**:\n\n    python convert.py\n\n<script>alert(1)</script>",
        fix_summary="convert_data_format: Convert the data", resolved_by=alice,
        first_seen=datetime.datetime(2026, 11, 2, 9, 0, tzinfo=datetime.UTC),
        resolved_at=datetime.datetime(2026, 11, 3, 9, 0, tzinfo=datetime.UTC),
    )
    later = recorded_incident(alpha)
    card = verdict_card(bob_client.get(reverse("jobs:incident_detail", args=[later.pk])))
    assert "Known problem · seen before: 1 time since" in card and "2026-11-02" in card
    assert "Convert the data to <strong>ShareGPT</strong>" in card and "<code>python convert.py" in card
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in card and "<script>alert" not in card
    assert "Fix that worked:</strong> convert_data_format: Convert the data" in card
    assert "by alice" in card
    # It came back after it was resolved: the banner says so.
    assert "Regressed:" in card
    assert reverse("knowledge:problem_detail", args=[Problem.objects.get().pk]) in card


def test_it_counts_every_earlier_occurrence(alice_client, alpha, recorded_incident):
    for _ in range(3):
        latest = recorded_incident(alpha)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[latest.pk])))
    assert "seen before: 2 times since" in card and ", last on " in card
    assert "No resolution recorded yet" in card


def test_it_says_nothing_is_known_the_first_time(alice_client, alpha, recorded_incident):
    incident = recorded_incident(alpha)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    assert "seen before" not in card
    assert "First time the team sees this failure" in card


def test_a_new_failure_lists_the_closest_past_incidents_with_a_score(alice_client, alpha, bravo, recorded_incident):
    evidence = [{"source": "log.txt", "line": 9, "text": "KeyError: 'conversations_alpha'"},
                {"source": "log.txt", "line": 7, "text": 'File "/tmp/ft/sft/train.py", line 119, in __getitem__'}]
    past = recorded_incident(alpha, "'conversations_alpha'", evidence=evidence, job_id="past-job")
    recorded_incident(alpha, "CUDA out of memory", category="gpu_oom", exception="OutOfMemoryError",
                      evidence=[{"source": "log.txt", "line": 1, "text": "CUDA out of memory"}])
    recorded_incident(bravo, "'conversations_alpha'", evidence=evidence, job_id="bravo-job")
    similar = [dict(item) for item in evidence]
    similar[0]["text"] = "KeyError: 'conversations_beta'"
    incident = recorded_incident(alpha, "'conversations_beta'", evidence=similar)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    assert "First time the team sees this failure" in card
    closest = card[card.index("Closest past incidents"):]
    assert reverse("jobs:incident_detail", args=[past.pk]) in closest and "past-job" in closest
    assert "% similar" in closest
    assert "bravo-job" not in closest  # another team
    assert "out of memory" not in closest.lower()  # another category


def test_it_shows_the_runbook_of_the_category_the_team_edited(alice_client, alpha, recorded_incident):
    incident = recorded_incident(alpha)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    assert "Runbook: The data does not have the fields the script reads" in card
    Runbook.objects.create(team=alpha, category="data_schema", body="Ask **Dana** <img src=x onerror=alert(1)>")
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    assert "Ask <strong>Dana</strong>" in card and "edited by the team" in card
    assert "<img" not in card


def test_the_incident_page_stays_within_its_query_budget(alice_client, alpha, recorded_incident,
                                                          django_assert_max_num_queries):
    recorded_incident(alpha)
    incident = recorded_incident(alpha)
    with django_assert_max_num_queries(12):
        assert alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])).status_code == 200
