"""Per-key rate limits answer 429 with Retry-After."""
import pytest

from jobs.api.throttles import ApiKeyRateThrottle, SubmitRateThrottle

pytestmark = pytest.mark.django_db


def test_it_throttles_submits_per_key(alpha_api, bravo_api, monkeypatch):
    monkeypatch.setattr(SubmitRateThrottle, "rate", "2/min", raising=False)
    codes = [alpha_api.post("/api/v1/incidents/", {}, format="multipart").status_code for _ in range(3)]
    assert codes == [400, 400, 429]
    response = alpha_api.post("/api/v1/incidents/", {}, format="multipart")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert response.json()["error"]["code"] == "throttled"
    # Reading is not a submit, and another team's key has its own budget.
    assert alpha_api.get("/api/v1/incidents/").status_code == 200
    assert bravo_api.post("/api/v1/incidents/", {}, format="multipart").status_code == 400


def test_it_throttles_every_request_per_key(alpha_api, monkeypatch):
    monkeypatch.setattr(ApiKeyRateThrottle, "rate", "3/min", raising=False)
    codes = [alpha_api.get("/api/v1/incidents/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
