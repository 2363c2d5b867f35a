"""Reading incidents: list filters and pagination, the detail shape, timeline, memory and artifacts."""
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from jobs.models import Artifact, Incident
from tests.api.conftest import DIAGNOSIS

pytestmark = pytest.mark.django_db


def test_it_filters_the_list_by_status_category_job_id_and_since(alpha, make_incident, alpha_api):
    diagnosed = make_incident(alpha, diagnosis=DIAGNOSIS, job_id="42")
    queued = make_incident(alpha, job_id="43")
    old = make_incident(alpha, job_id="44")
    Incident.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))

    def ids(**params):
        response = alpha_api.get("/api/v1/incidents/", params)
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids() == [queued.pk, diagnosed.pk, old.pk]
    assert ids(status="diagnosed") == [diagnosed.pk]
    assert ids(category="data_schema") == [diagnosed.pk]
    assert ids(job_id="43") == [queued.pk]
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(since=since) == [queued.pk, diagnosed.pk]


def test_it_answers_400_for_a_bad_filter(alpha_api):
    response = alpha_api.get("/api/v1/incidents/", {"status": "exploded"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "status"
    response = alpha_api.get("/api/v1/incidents/", {"since": "yesterday"})
    assert response.json()["error"]["field"] == "since"


def test_it_paginates_in_a_stable_order(alpha, make_incident, alpha_api):
    made = [make_incident(alpha, job_id=str(n)).pk for n in range(5)]
    first = alpha_api.get("/api/v1/incidents/", {"page_size": 2}).json()
    assert first["count"] == 5 and first["next"]
    second = alpha_api.get(first["next"]).json()
    assert [r["id"] for r in first["results"] + second["results"]] == sorted(made, reverse=True)[:4]


def test_it_lists_without_a_query_per_incident(alpha, make_incident, alpha_api, django_assert_max_num_queries):
    for n in range(20):
        make_incident(alpha, job_id=str(n))
    with django_assert_max_num_queries(4):
        assert alpha_api.get("/api/v1/incidents/").status_code == 200


def test_it_shows_the_contract_detail(alpha, make_incident, alpha_api):
    incident = make_incident(alpha, diagnosis=DIAGNOSIS, job_id="42", attempt="1", scheduler="slurm")
    body = alpha_api.get(f"/api/v1/incidents/{incident.pk}/").json()
    assert body["id"] == incident.pk and body["status"] == "diagnosed" and body["job_id"] == "42"
    assert body["diagnosis"] == DIAGNOSIS
    assert body["problem"] is None
    assert body["repro_runs"] == []
    assert body["deliveries"] == []
    assert body["links"]["timeline"].endswith(f"/api/v1/incidents/{incident.pk}/timeline/")


def test_it_shows_null_diagnosis_while_queued(alpha, make_incident, alpha_api):
    incident = make_incident(alpha)
    body = alpha_api.get(f"/api/v1/incidents/{incident.pk}/").json()
    assert body["status"] == "queued" and body["diagnosis"] is None
    assert alpha_api.get(f"/api/v1/incidents/{incident.pk}/timeline/").json()["ranks"] == []
    assert alpha_api.get(f"/api/v1/incidents/{incident.pk}/memory/").json()["series"] == []


def test_it_serves_timeline_and_memory_from_the_diagnosis(alpha, make_incident, alpha_api):
    incident = make_incident(alpha, diagnosis=DIAGNOSIS)
    timeline = alpha_api.get(f"/api/v1/incidents/{incident.pk}/timeline/").json()
    assert timeline["failing_rank"] == 1 and timeline["ranks"] == DIAGNOSIS["ranks"]
    memory = alpha_api.get(f"/api/v1/incidents/{incident.pk}/memory/").json()
    assert memory["series"] == DIAGNOSIS["memory"]["series"] and memory["estimate"] is None


def test_it_lists_and_downloads_artifacts(alpha, make_incident, alpha_api):
    incident = make_incident(alpha)
    artifact = Artifact(incident=incident, original_name="rank0.log", size=11, sha256="0" * 64)
    artifact.file.save("x", ContentFile(b"hello world"), save=True)
    listed = alpha_api.get(f"/api/v1/incidents/{incident.pk}/artifacts/").json()
    assert [row["name"] for row in listed] == ["rank0.log"]
    response = alpha_api.get(listed[0]["download_url"])
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"hello world"
    assert 'filename="rank0.log"' in response["Content-Disposition"]
    missing = alpha_api.get(f"/api/v1/incidents/{incident.pk}/artifacts/999999/download/")
    assert missing.status_code == 404


def test_it_answers_json_errors_for_unknown_paths_and_methods(alpha, make_incident, alpha_api):
    incident = make_incident(alpha)
    response = alpha_api.get("/api/v1/nothing-here/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = alpha_api.delete(f"/api/v1/incidents/{incident.pk}/")
    assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
    response = alpha_api.get("/api/v1/incidents/0/")
    assert response.status_code == 404
