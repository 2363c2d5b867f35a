"""Nobody locked out, nobody let in: reads and submits survive a Redis outage, forged
X-Forwarded-For does not dodge the failed-key limiter, logins are throttled, chart text is escaped."""
import pytest
from django.core.cache import caches
from django.urls import reverse
from rest_framework.test import APIClient

from jobs import memorychart, timelinechart

pytestmark = pytest.mark.django_db
DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def redis_down(settings):
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": DEAD_REDIS,
        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    caches._settings = None  # noqa: SLF001 - let the handler re-read CACHES
    for alias in ("default",):
        try:
            del caches[alias]
        except (AttributeError, KeyError):
            pass
    yield
    caches._settings = None


def api(raw_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw_key}")
    return client


def test_reads_and_submits_answer_while_the_cache_is_down(alpha, alice, redis_down, monkeypatch):
    from jobs.models import ApiKey

    monkeypatch.setattr("jobs.uploads._enqueue", lambda pk: None)
    _, raw = ApiKey.issue(alpha, name="ci")
    client = api(raw)
    assert client.get("/api/v1/incidents/").status_code == 200
    response = client.post("/api/v1/incidents/", {"pasted_log": "KeyError: 'x'\n"}, format="multipart")
    assert response.status_code == 202
    assert api("trg_wrong").get("/api/v1/incidents/").status_code == 401


def test_incident_pages_and_charts_answer_while_the_cache_is_down(alpha, alice, client, make_incident, redis_down):
    from tests.pages.factories import sample_diagnosis

    client.force_login(alice)
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    assert client.get(reverse("jobs:incident_detail", args=[incident.pk])).status_code == 200
    assert client.get(reverse("jobs:incident_timeline_json", args=[incident.pk])).status_code == 200


def test_a_forged_forwarded_for_does_not_reset_the_failed_key_limiter(db, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 0}
    caches["default"].clear()
    codes = []
    for attempt in range(35):
        client = APIClient(HTTP_X_FORWARDED_FOR=f"198.51.100.{attempt}")
        client.credentials(HTTP_AUTHORIZATION="Token trg_guess")
        codes.append(client.get("/api/v1/incidents/").status_code)
    assert codes[-1] == 429


def test_behind_one_proxy_the_limiter_counts_the_address_the_proxy_saw(db, settings):
    from django.test import RequestFactory

    from jobs.api.throttles import client_ip

    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR="10.9.9.9, 203.0.113.7", REMOTE_ADDR="127.0.0.1")
    assert client_ip(request) == "203.0.113.7"  # the client-sent first entry is not trusted


def test_repeated_wrong_passwords_lock_the_login(client, alice, settings):
    url = reverse("login")
    codes = [client.post(url, {"username": "alice", "password": "wrong"}).status_code
             for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert codes == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    locked = client.post(url, {"username": "alice", "password": "correct-horse-battery"})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_right_password_before_the_limit_logs_in(client, alice):
    client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice", "password": "correct-horse-battery"})
    assert response.status_code == 302 and "_auth_user_id" in client.session


def test_chart_text_from_a_log_shows_its_markup_as_typed():
    payload = '<a href="https://evil.example" style="color:red">click</a><b>x</b>'
    data = {"world_size": 1, "failing_rank": 0, "ranks": [
        {"rank": 0, "status": "failed", "events": [{"t": 1.0, "seq": 1, "kind": "error", "text": payload}]}],
        "memory": {"series": [{"name": "<img src=x onerror=alert(1)>", "points": [[0, 1], [1, 2]]}]}}
    timeline = timelinechart.timeline(data)
    hover = [text for trace in timeline["traces"] for text in trace.get("text", []) if isinstance(text, str)]
    assert any("&lt;a href=" in text for text in hover)
    assert all("<a" not in text and "<b>" not in text for text in hover)
    names = [trace["name"] for trace in memorychart.memory(data)["traces"]]
    assert all("<img" not in name for name in names)
