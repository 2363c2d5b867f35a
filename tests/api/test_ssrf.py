"""Callback URLs that reach internal addresses are refused, at submit and at delivery."""
import socket

import pytest

from jobs.webhooks import UnsafeURL, check_url

REFUSED = [
    "http://127.0.0.1/hook",
    "http://localhost:8000/hook",
    "http://[::1]/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.10/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/hook",
    "http://224.0.0.1/hook",
    "http://0.0.0.0/hook",
    "http://240.0.0.1/hook",
    "http://100.64.0.1/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fc00::1]/hook",
    "ftp://93.184.215.14/hook",
    "http://user:pw@93.184.215.14/hook",
    "file:///etc/passwd",
]


@pytest.mark.parametrize("url", REFUSED)
def test_it_refuses_non_public_destinations(url):
    with pytest.raises(UnsafeURL):
        check_url(url, allow_private=False)


def test_it_accepts_a_public_address():
    check_url("https://93.184.215.14/hooks/triage", allow_private=False)


def test_it_checks_every_address_a_name_resolves_to(monkeypatch):
    def resolve(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with pytest.raises(UnsafeURL, match="10.0.0.7"):
        check_url("https://hooks.example.com/x", allow_private=False)


def test_it_allows_private_destinations_when_settings_say_so():
    check_url("http://127.0.0.1:9/hook", allow_private=True)


@pytest.mark.django_db
def test_it_refuses_a_private_callback_url_at_submit(alpha_api, settings):
    from tests.api.conftest import log_file

    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = False
    response = alpha_api.post(
        "/api/v1/incidents/", {"files": [log_file()], "callback_url": "http://169.254.169.254/x"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "callback_url"
    assert response.json()["error"]["code"] == "unsafe_url"
