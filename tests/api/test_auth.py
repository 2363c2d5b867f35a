"""Keys: Token and Bearer work; missing, wrong, expired and revoked keys answer 401; read-only keys cannot submit."""
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import ApiKey

pytestmark = pytest.mark.django_db


def test_it_accepts_token_and_bearer(alpha_key, client_with):
    for keyword in ("Token", "Bearer"):
        response = client_with(alpha_key, keyword).get("/api/v1/incidents/")
        assert response.status_code == 200, keyword


def test_it_answers_401_in_json_without_credentials(client):
    response = client.get("/api/v1/incidents/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response.json()["error"]["field"] is None
    assert response["WWW-Authenticate"] == "Token"


def test_it_refuses_a_wrong_key(client_with, alpha_key):
    response = client_with(alpha_key[:-2] + "xx").get("/api/v1/incidents/")
    assert response.status_code == 401
    assert response.json()["error"] == {"code": "authentication_failed", "message": "Invalid API key.",
                                        "field": None}


def test_it_refuses_an_expired_key(alpha, issue_key, client_with):
    _, raw = issue_key(alpha, expires_at=timezone.now() - timedelta(seconds=1))
    response = client_with(raw).get("/api/v1/incidents/")
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]


def test_it_accepts_a_key_before_its_expiry(alpha, issue_key, client_with):
    _, raw = issue_key(alpha, expires_at=timezone.now() + timedelta(days=1))
    assert client_with(raw).get("/api/v1/incidents/").status_code == 200


def test_it_refuses_a_revoked_key(alpha, issue_key, client_with):
    row, raw = issue_key(alpha)
    ApiKey.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    response = client_with(raw).get("/api/v1/incidents/")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


def test_it_refuses_submits_with_a_read_only_key(alpha_read_key, client_with):
    api = client_with(alpha_read_key)
    assert api.get("/api/v1/incidents/").status_code == 200
    response = api.post("/api/v1/incidents/", {"pasted_log": "boom"}, format="multipart")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "read_only_key"


def test_it_stores_only_the_hash_and_the_prefix(alpha, issue_key):
    row, raw = issue_key(alpha)
    assert raw.startswith("trg_") and raw.startswith(row.prefix)
    assert raw not in (row.hashed_key, row.prefix)


def test_it_writes_last_used_at_at_most_once_a_minute(alpha, issue_key, client_with, django_assert_max_num_queries):
    row, raw = issue_key(alpha)
    api = client_with(raw)
    api.get("/api/v1/incidents/")
    first = ApiKey.objects.get(pk=row.pk).last_used_at
    assert first is not None
    api.get("/api/v1/incidents/")
    assert ApiKey.objects.get(pk=row.pk).last_used_at == first
    ApiKey.objects.filter(pk=row.pk).update(last_used_at=first - timedelta(minutes=2))
    api.get("/api/v1/incidents/")
    assert ApiKey.objects.get(pk=row.pk).last_used_at > first - timedelta(minutes=1)


def test_it_lets_alice_use_the_api_with_her_browser_session(client, alice, make_incident, alpha):
    incident = make_incident(alpha)
    client.force_login(alice)
    assert client.get(f"/api/v1/incidents/{incident.pk}/").status_code == 200


def test_it_answers_429_to_an_address_guessing_keys_but_lets_valid_keys_pass(alpha_key, client_with, monkeypatch):
    monkeypatch.setattr("jobs.api.auth.FAILED_ATTEMPTS_PER_MINUTE", 3)
    guesser = client_with("trg_guess")
    codes = [guesser.get("/api/v1/incidents/").status_code for _ in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    response = guesser.get("/api/v1/incidents/")
    assert response.json()["error"]["code"] == "throttled" and int(response["Retry-After"]) == 60
    assert client_with(alpha_key).get("/api/v1/incidents/").status_code == 200
