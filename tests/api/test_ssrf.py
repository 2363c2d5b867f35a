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
    "http://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
    "http://[2002:a9fe:a9fe::]/hook",  # 6to4 of 169.254.169.254
    "http://[2002:0a00:0001::1]/hook",  # 6to4 of 10.0.0.1
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo, client 127.0.0.1
    "http://[2001:0:a9fe:a9fe:0:0:f5ff:fffe]/hook",  # Teredo via a link-local server
    "http://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of the metadata address
    "http://[64:ff9b:1::5db8:d70e]/hook",  # local-use NAT64 prefix
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


@pytest.mark.parametrize("url", ["http://[2002:5db8:d70e::1]/hook", "http://[64:ff9b::5db8:d70e]/hook"])
def test_it_accepts_transition_addresses_of_a_public_ipv4(url):
    check_url(url, allow_private=False)


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
