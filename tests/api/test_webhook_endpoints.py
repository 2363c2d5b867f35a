"""Teams manage standing webhook endpoints through the API; the secret is shown once."""
import pytest

from jobs.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

PUBLIC = "https://93.184.215.14/hooks/triage"


def test_it_creates_an_endpoint_and_shows_its_secret_once(alpha, alpha_api):
    created = alpha_api.post("/api/v1/webhooks/", {"url": PUBLIC}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["active"] is True
    assert WebhookEndpoint.objects.get().team == alpha
    shown = alpha_api.get(f"/api/v1/webhooks/{body['id']}/").json()
    assert "secret" not in shown and shown["url"] == PUBLIC


def test_it_refuses_private_endpoint_urls(alpha_api, settings):
    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = False
    response = alpha_api.post("/api/v1/webhooks/", {"url": "http://10.0.0.5/hook"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "url"


def test_it_deactivates_and_deletes(alpha, alpha_api):
    endpoint = WebhookEndpoint.objects.create(team=alpha, url=PUBLIC)
    patched = alpha_api.patch(f"/api/v1/webhooks/{endpoint.pk}/", {"active": False}, format="json")
    assert patched.status_code == 200 and patched.json()["active"] is False
    assert alpha_api.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 204
    assert not WebhookEndpoint.objects.exists()


def test_it_isolates_teams_and_scopes(alpha, alpha_read_key, bravo_api, client_with, client, bob, charlie):
    endpoint = WebhookEndpoint.objects.create(team=alpha, url=PUBLIC)
    assert bravo_api.get(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 404
    assert bravo_api.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 404
    assert bravo_api.get("/api/v1/webhooks/").json()["results"] == []
    read_only = client_with(alpha_read_key)
    assert read_only.get("/api/v1/webhooks/").status_code == 200
    assert read_only.post("/api/v1/webhooks/", {"url": PUBLIC}, format="json").status_code == 403
    client.force_login(bob)  # a member, not an admin
    assert client.get("/api/v1/webhooks/").status_code == 200
    assert client.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 403
    client.force_login(charlie)
    assert client.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 404
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
