"""The API keys page: team admins create keys (shown once) and revoke them; members only look."""
import re

import pytest
from django.core.management import CommandError, call_command

from jobs.models import ApiKey

pytestmark = pytest.mark.django_db


def test_it_lets_alice_create_a_key_shown_once(client, alice, alpha):
    client.force_login(alice)
    response = client.post("/settings/api-keys/", {"team": alpha.pk, "name": "slurm", "scope": "read",
                                                   "expires_days": "30"})
    assert response.status_code == 200
    raw = re.search(rb"trg_[A-Za-z0-9_-]{20,}", response.content).group().decode()
    key = ApiKey.objects.get()
    assert (key.team, key.scope, key.created_by, key.name) == (alpha, "read", alice, "slurm")
    assert key.expires_at is not None and raw.startswith(key.prefix)
    assert response["Cache-Control"] == "no-store"
    again = client.get("/settings/api-keys/")
    assert raw.encode() not in again.content and key.prefix.encode() in again.content


def test_it_lets_alice_revoke_a_key(client, alice, alpha, issue_key, client_with):
    row, raw = issue_key(alpha)
    client.force_login(alice)
    assert client.post(f"/settings/api-keys/{row.pk}/revoke/").status_code == 302
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert client_with(raw).get("/api/v1/incidents/").status_code == 401


def test_it_does_not_let_bob_create_or_revoke(client, bob, alpha, issue_key):
    row, _ = issue_key(alpha)
    client.force_login(bob)
    page = client.get("/settings/api-keys/")
    assert page.status_code == 200 and row.prefix.encode() in page.content
    client.post("/settings/api-keys/", {"team": alpha.pk, "scope": "write"})
    assert ApiKey.objects.count() == 1
    assert client.post(f"/settings/api-keys/{row.pk}/revoke/").status_code == 404
    row.refresh_from_db()
    assert row.revoked_at is None


def test_it_does_not_let_charlie_see_or_revoke_alpha_keys(client, charlie, alpha, issue_key):
    row, _ = issue_key(alpha)
    client.force_login(charlie)
    assert row.prefix.encode() not in client.get("/settings/api-keys/").content
    assert client.post(f"/settings/api-keys/{row.pk}/revoke/").status_code == 404
    client.post("/settings/api-keys/", {"team": alpha.pk, "scope": "write"})
    assert ApiKey.objects.count() == 1


def test_it_creates_keys_from_the_command_line(alpha, capsys, client_with):
    call_command("create_api_key", "Alpha", "--scope", "read", "--expires-days", "7")
    raw = capsys.readouterr().out.strip()
    key = ApiKey.objects.get()
    assert raw.startswith("trg_") and key.scope == "read" and key.expires_at is not None
    assert client_with(raw).get("/api/v1/incidents/").status_code == 200
    with pytest.raises(CommandError):
        call_command("create_api_key", "Nobody")
