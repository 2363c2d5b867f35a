"""Story: alice opens the incident list of team Alpha and narrows it down."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Incident
from tests.pages.factories import sample_diagnosis

LIST = reverse("jobs:incident_list")


def test_it_requires_login(client, db):
    response = client.get(LIST)
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_lists_the_teams_incidents_newest_first(alice_client, alpha, bravo, make_incident):
    older = make_incident(alpha, job_id="job-older")
    make_incident(alpha, diagnosis=sample_diagnosis(2), job_id="job-newer")
    make_incident(bravo, job_id="job-of-bravo")
    Incident.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=1))

    body = alice_client.get(LIST).content.decode()

    assert body.index("job-newer") < body.index("job-older")
    assert "job-of-bravo" not in body
    row = body[body.index("job-newer"):]
    assert "data_schema" in row and "KeyError" in row and "rank 1" in row


def test_it_filters_by_category_status_cluster_launcher_and_date(alice_client, alpha, make_incident):
    oom = make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5), job_id="job-oom")
    Incident.objects.filter(pk=oom.pk).update(cluster="eu-a100", launcher="torchrun")
    make_incident(alpha, diagnosis=sample_diagnosis(2), job_id="job-keyerror", cluster="us-h100", launcher="deepspeed")
    queued = make_incident(alpha, job_id="job-queued")
    Incident.objects.filter(pk=queued.pk).update(created_at=timezone.now() - timedelta(days=30))

    def job_ids(**params):
        body = alice_client.get(LIST, params).content.decode()
        return {name for name in ("job-oom", "job-keyerror", "job-queued") if name in body}

    assert job_ids(category="gpu_oom") == {"job-oom"}
    assert job_ids(status="queued") == {"job-queued"}
    assert job_ids(cluster="us-h100") == {"job-keyerror"}
    assert job_ids(launcher="torchrun") == {"job-oom"}
    since = (timezone.now() - timedelta(days=2)).date().isoformat()
    assert job_ids(since=since) == {"job-oom", "job-keyerror"}
    until = (timezone.now() - timedelta(days=10)).date().isoformat()
    assert job_ids(until=until) == {"job-queued"}
    assert job_ids(since="not-a-date") == {"job-oom", "job-keyerror", "job-queued"}


def test_it_searches_job_id_exception_and_summary(alice_client, alpha, make_incident):
    make_incident(alpha, diagnosis=sample_diagnosis(2), job_id="slurm-4242")
    make_incident(alpha, diagnosis=sample_diagnosis(256, memory_points=5), job_id="slurm-7777")

    def found(query):
        body = alice_client.get(LIST, {"q": query}).content.decode()
        return {name for name in ("slurm-4242", "slurm-7777") if name in body}

    assert found("4242") == {"slurm-4242"}
    assert found("OutOfMemory") == {"slurm-7777"}
    assert found("sharegpt") == {"slurm-4242"}
    assert found("nothing-like-this") == set()


def test_it_paginates_fifty_a_page(alice_client, alpha):
    Incident.objects.bulk_create([Incident(team=alpha, title="t", job_id=f"job-{n:03d}") for n in range(120)])

    first = alice_client.get(LIST)
    third = alice_client.get(LIST, {"page": 3})

    assert len(first.context["incidents"]) == 50
    assert len(third.context["incidents"]) == 20
    assert "Page 1 of 3" in first.content.decode()
    assert alice_client.get(LIST, {"page": 99}).status_code == 200


def test_pagination_links_keep_the_filters(alice_client, alpha):
    Incident.objects.bulk_create([Incident(team=alpha, title="t", cluster="eu") for _ in range(60)])
    body = alice_client.get(LIST, {"cluster": "eu"}).content.decode()
    assert "?cluster=eu&amp;page=2" in body


def test_it_escapes_what_came_from_logs(alice_client, alpha, make_incident):
    make_incident(alpha, job_id="<script>alert(1)</script>", summary="<img src=x onerror=alert(2)>")
    body = alice_client.get(LIST).content.decode()
    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;alert(1)" in body
    assert "<img src=x" not in body


def test_it_needs_a_handful_of_queries_whatever_the_size(alice_client, alpha, django_assert_max_num_queries):
    Incident.objects.bulk_create([
        Incident(team=alpha, title="t", job_id=f"job-{n}", category="gpu_oom", cluster=f"c{n % 5}",
                 launcher="torchrun", status="diagnosed", summary="OOM", failing_rank=n % 8)
        for n in range(300)
    ])
    with django_assert_max_num_queries(10):
        response = alice_client.get(LIST, {"q": "job"})
    assert response.status_code == 200


@pytest.mark.parametrize("page", ["abc", "-1", "0"])
def test_it_tolerates_bad_page_numbers(alice_client, alpha, page):
    assert alice_client.get(LIST, {"page": page}).status_code == 200
