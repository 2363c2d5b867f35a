"""Story: bob's job dies the way alice's did last week; his incident page shows what fixed it."""
import datetime

import pytest
from django.urls import reverse

from knowledge.models import Problem

pytestmark = pytest.mark.django_db


def verdict_card(response) -> str:
    body = response.content.decode()
    return body[body.index('id="verdict"'):body.index("</section>", body.index('id="verdict"'))]


def test_it_shows_the_past_resolution_on_a_later_incident(alice, bob_client, alpha, recorded_incident):
    recorded_incident(alpha, "f00d" * 4)
    Problem.objects.update(
        status="resolved", resolution="Convert the data to ShareGPT:\npython convert.py <script>alert(1)</script>",
        first_seen=datetime.datetime(2026, 11, 2, 9, 0, tzinfo=datetime.UTC), resolved_by=alice,
    )
    later = recorded_incident(alpha, "f00d" * 4)
    card = verdict_card(bob_client.get(reverse("jobs:incident_detail", args=[later.pk])))
    assert "Seen before: 1 time since" in card and "2026-11-02" in card
    assert "Convert the data to ShareGPT:<br>python convert.py" in card
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in card and "<script>alert" not in card
    assert "by alice" in card
    assert reverse("knowledge:problem_detail", args=[Problem.objects.get().pk]) in card


def test_it_counts_every_earlier_occurrence(alice_client, alpha, recorded_incident):
    for _ in range(3):
        latest = recorded_incident(alpha, "f00d" * 4)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[latest.pk])))
    assert "Seen before: 2 times since" in card
    assert "No resolution recorded yet" in card


def test_it_says_nothing_is_known_the_first_time(alice_client, alpha, recorded_incident):
    incident = recorded_incident(alpha, "f00d" * 4)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    assert "Seen before" not in card
    assert "First time the team sees this failure" in card


def test_it_lists_related_problems_of_the_same_kind(alice_client, alpha, bravo, recorded_incident):
    recorded_incident(alpha, "0001" * 4, message="'messages'")
    recorded_incident(alpha, "0002" * 4, category="code_bug", exception="KeyError", message="'labels'")
    recorded_incident(bravo, "0003" * 4, message="'text'")
    incident = recorded_incident(alpha, "0004" * 4)
    card = verdict_card(alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])))
    related = card[card.index("Related problems"):]
    assert "KeyError: &#x27;messages&#x27;" in related
    assert "labels" not in related  # another category
    assert "&#x27;text&#x27;" not in related  # another team


def test_the_incident_page_stays_within_its_query_budget(alice_client, alpha, recorded_incident,
                                                          django_assert_max_num_queries):
    recorded_incident(alpha, "f00d" * 4)
    incident = recorded_incident(alpha, "f00d" * 4)
    with django_assert_max_num_queries(10):
        assert alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])).status_code == 200
