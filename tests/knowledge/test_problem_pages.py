"""Story: alice browses her team's knowledge base; bob writes down what fixed a problem; charlie sees none of it."""
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from knowledge.models import Problem

pytestmark = pytest.mark.django_db


def problem_url(problem):
    return reverse("knowledge:problem_detail", args=[problem.pk])


def test_it_lists_the_teams_problems_newest_seen_first(alice_client, alpha, bravo, recorded_incident):
    recorded_incident(alpha, message="'older'")
    recorded_incident(alpha, message="'newer'")
    recorded_incident(bravo, message="'bravo only'")
    Problem.objects.filter(title__contains="older").update(last_seen=timezone.now() - timezone.timedelta(days=3))
    body = alice_client.get(reverse("knowledge:problem_list")).content.decode()
    assert body.index("&#x27;newer&#x27;") < body.index("&#x27;older&#x27;")
    assert "bravo only" not in body
    assert "2 problems" in body
    assert 'href="/knowledge/"' in body  # the nav link


def test_it_filters_by_status_and_category_and_searches(alice_client, alpha, recorded_incident):
    recorded_incident(alpha, message="'conversations'")
    recorded_incident(alpha, category="oom", exception="OutOfMemoryError", message="CUDA out of memory")
    Problem.objects.filter(category="data_schema").update(status="resolved", resolution="use the sharegpt converter")
    url = reverse("knowledge:problem_list")
    assert "CUDA out of memory" not in alice_client.get(url, {"status": "resolved"}).content.decode()
    assert "conversations" not in alice_client.get(url, {"category": "oom"}).content.decode()
    found = alice_client.get(url, {"q": "sharegpt"}).content.decode()
    assert "conversations" in found and "CUDA out of memory" not in found


def test_it_shows_a_problems_incidents_newest_first(alice_client, alpha, recorded_incident):
    older = recorded_incident(alpha, job_id="older-job")
    newer = recorded_incident(alpha, job_id="newer-job")
    body = alice_client.get(problem_url(Problem.objects.get())).content.decode()
    assert body.index(f"#{newer.pk} newer-job") < body.index(f"#{older.pk} older-job")
    assert "2 incidents" in body


def test_any_team_member_may_set_status_and_resolution(bob_client, bob, alpha, recorded_incident):
    recorded_incident(alpha)
    problem = Problem.objects.get()
    response = bob_client.post(problem_url(problem), {"status": "resolved", "resolution": "  Rename the column.  "})
    assert response.status_code == 302
    problem.refresh_from_db()
    assert (problem.status, problem.resolution, problem.resolved_by) == ("resolved", "Rename the column.", bob)
    assert problem.resolved_at is not None
    assert "by bob" in bob_client.get(problem_url(problem)).content.decode()


def test_it_refuses_a_post_without_the_csrf_token(alice, alpha, recorded_incident):
    recorded_incident(alpha)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    assert browser.post(problem_url(Problem.objects.get()), {"status": "resolved"}).status_code == 403
    assert Problem.objects.get().status == "open"


def test_it_rejects_an_unknown_status(alice_client, alpha, recorded_incident):
    recorded_incident(alpha)
    response = alice_client.post(problem_url(Problem.objects.get()), {"status": "fixed?", "resolution": ""})
    assert response.status_code == 200 and "field-error" in response.content.decode()
    assert Problem.objects.get().status == "open"


def test_charlie_gets_404_on_alices_problem(charlie_client, alice, alpha, recorded_incident):
    recorded_incident(alpha)
    problem = Problem.objects.get()
    assert charlie_client.get(problem_url(problem)).status_code == 404
    assert charlie_client.post(problem_url(problem), {"status": "wont_fix", "resolution": "x"}).status_code == 404
    assert Problem.objects.get().status == "open"


def test_it_sends_anonymous_visitors_to_log_in(client, alpha, recorded_incident):
    recorded_incident(alpha)
    for url in (reverse("knowledge:problem_list"), problem_url(Problem.objects.get())):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_list_needs_a_handful_of_queries_whatever_the_size(alice_client, alpha, recorded_incident,
                                                               django_assert_max_num_queries):
    for n in range(12):
        recorded_incident(alpha, f"'field_{chr(97 + n)}'")
    with django_assert_max_num_queries(8):
        assert alice_client.get(reverse("knowledge:problem_list")).status_code == 200


def test_the_problem_page_tells_its_story(alice_client, alpha, recorded_incident):
    import datetime

    from knowledge.models import ProblemOccurrence

    first = recorded_incident(alpha, job_id="sft-7", cluster="h100-east", failing_rank=3)
    second = recorded_incident(alpha, job_id="sft-8", cluster="a100-west", failing_rank=3)
    recorded_incident(alpha, job_id="sft-8", cluster="a100-west", failing_rank=0)
    ProblemOccurrence.objects.filter(incident=first).update(seen_at=datetime.datetime(2026, 11, 20, 8, tzinfo=datetime.UTC))
    problem = Problem.objects.get()
    page = alice_client.get(reverse("knowledge:problem_detail", args=[problem.pk])).content.decode()
    story = page[page.index('id="story"'):page.index("</section>", page.index('id="story"'))]
    assert "<code>sft-8</code> <span class=\"muted\">×2</span>" in story and "<code>sft-7</code>" in story
    assert "a100-west <span class=\"muted\">×2</span>" in story and "h100-east" in story
    assert "rank 3 <span class=\"muted\">×2</span>" in story and "rank 0" in story
    assert '"days": ["2026-11-20", ' in story and '"counts": [1, 2]' in story  # the chart's data, per day
    assert "vendor/plotly.min.js" in page and "knowledge/occurrences.js" in page
    incidents = page[page.index('id="incidents"'):]
    assert reverse("jobs:incident_detail", args=[second.pk]) in incidents
