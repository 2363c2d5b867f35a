"""Submitting a failed job: 202 at once, retries answer the first incident, clear errors otherwise."""
import gzip
import io

import pytest

from jobs.models import Artifact, Incident
from tests.api.conftest import log_file

pytestmark = pytest.mark.django_db

SUBMIT = "/api/v1/incidents/"


@pytest.fixture
def enqueued(monkeypatch):
    """Diagnoses the uploads module would enqueue on commit (nothing goes to the broker)."""
    queued = []
    monkeypatch.setattr("jobs.uploads._enqueue", queued.append)
    return queued


def test_it_answers_202_with_id_status_and_url(alpha, alpha_api, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = alpha_api.post(SUBMIT, {
            "files": [log_file("rank0.log"), log_file("rank1.log")], "command": "torchrun --nproc-per-node 2 train.py",
            "job_id": "slurm-981", "scheduler": "slurm", "cluster": "a100-east",
        }, format="multipart")
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"id", "status", "url"}
    assert body["status"] == "queued" and body["url"].endswith(f"/api/v1/incidents/{body['id']}/")
    incident = Incident.objects.get(pk=body["id"])
    assert incident.team == alpha and incident.job_id == "slurm-981" and incident.scheduler == "slurm"
    assert sorted(incident.artifacts.values_list("original_name", flat=True)) == ["rank0.log", "rank1.log"]
    assert enqueued == [incident.pk]


def test_it_accepts_gz_logs_config_and_data(alpha_api, enqueued):
    packed = io.BytesIO(gzip.compress(b"RuntimeError: CUDA out of memory\n"))
    packed.name = "rank0.log.gz"
    config = io.BytesIO(b'{"zero_optimization": {"stage": 3}}')
    config.name = "ds_config.json"
    data = io.BytesIO(b'{"text": "hello"}\n')
    data.name = "sample.jsonl"
    response = alpha_api.post(SUBMIT, {"files": [packed], "config": config, "data": data}, format="multipart")
    assert response.status_code == 202, response.content
    kinds = set(Artifact.objects.filter(incident_id=response.json()["id"]).values_list("kind", flat=True))
    assert kinds == {"log", "config", "data_sample"}


def test_it_answers_the_first_incident_to_a_retry_with_the_same_idempotency_key(alpha_api, enqueued):
    first = alpha_api.post(SUBMIT, {"files": [log_file()]}, format="multipart", HTTP_IDEMPOTENCY_KEY="job-7-try-1")
    again = alpha_api.post(SUBMIT, {"files": [log_file()]}, format="multipart", HTTP_IDEMPOTENCY_KEY="job-7-try-1")
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Incident.objects.count() == 1


def test_it_derives_the_key_from_job_id_and_attempt(alpha_api, enqueued):
    form = {"job_id": "981", "attempt": "2"}
    first = alpha_api.post(SUBMIT, {**form, "files": [log_file()]}, format="multipart").json()
    again = alpha_api.post(SUBMIT, {**form, "files": [log_file()]}, format="multipart").json()
    other_attempt = alpha_api.post(SUBMIT, {"job_id": "981", "attempt": "3", "files": [log_file()]},
                                   format="multipart").json()
    assert first["id"] == again["id"] != other_attempt["id"]
    assert Incident.objects.get(pk=first["id"]).idempotency_key == "job:981:attempt:2"


def test_it_keeps_idempotency_keys_per_team(alpha_api, bravo_api, enqueued):
    ids = {api.post(SUBMIT, {"files": [log_file()]}, format="multipart", HTTP_IDEMPOTENCY_KEY="same").json()["id"]
           for api in (alpha_api, bravo_api)}
    assert len(ids) == 2


def test_it_answers_400_without_files(alpha_api):
    response = alpha_api.post(SUBMIT, {"job_id": "1"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "files"


def test_it_answers_400_for_an_empty_file_and_leaves_nothing(alpha_api, enqueued):
    response = alpha_api.post(SUBMIT, {"files": [log_file(text="")]}, format="multipart")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["message"], error["field"]) == ("empty_file", "rank1.log is empty.", "files")
    assert Incident.objects.count() == 0


def test_it_answers_400_for_a_bad_idempotency_key(alpha_api):
    response = alpha_api.post(SUBMIT, {"files": [log_file()]}, format="multipart", HTTP_IDEMPOTENCY_KEY="a b")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "Idempotency-Key"


def test_it_answers_415_to_json(alpha_api):
    response = alpha_api.post(SUBMIT, {"files": "x"}, format="json")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_it_answers_413_to_an_upload_over_the_limit(alpha_api, settings, enqueued):
    settings.TRIAGE_UPLOAD_MAX_BYTES = 100
    response = alpha_api.post(SUBMIT, {"files": [log_file(text="x" * 200)]}, format="multipart")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert Incident.objects.count() == 0


def test_it_answers_413_from_content_length_before_reading_the_body(alpha_api, settings):
    settings.TRIAGE_UPLOAD_MAX_BYTES = 10
    response = alpha_api.post(SUBMIT, {"files": [log_file(text="x" * (2 * 1024 * 1024))]}, format="multipart")
    assert response.status_code == 413


def test_it_lets_bob_submit_from_his_browser_session(client, bob, alpha, enqueued):
    client.force_login(bob)
    response = client.post(SUBMIT, {"files": [log_file()]})
    assert response.status_code == 202
    assert Incident.objects.get().team == alpha
