"""Webhook transport: the address guard (SSRF) and the signed POST to a vetted address.

Destinations that resolve to loopback, private, link-local, multicast, reserved or unspecified
addresses are refused unless settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE, also when they hide inside an
IPv6 transition address: IPv4-mapped (::ffff:a.b.c.d), 6to4 (2002:AABB:CCDD::), Teredo (2001::/32)
and NAT64 (64:ff9b::a.b.c.d, and the local-use 64:ff9b:1::/48).

Every POST is signed: X-Triage-Signature = "sha256=" + HMAC-SHA256(secret, timestamp + "." + body),
with the timestamp (unix seconds) in X-Triage-Timestamp.
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import socket
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings

TIMEOUT_SECONDS = 10
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


class UnsafeURL(ValueError):
    """The URL is not an http(s) URL or points to an address we refuse to call."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 transition address leads to (mapped, 6to4, Teredo, NAT64)."""
    found = []
    if address.ipv4_mapped:
        found.append(address.ipv4_mapped)
    if address.sixtofour:
        found.append(address.sixtofour)
    if address.teredo:
        found.extend(address.teredo)  # (server, client)
    if address in _NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return True
        inner = embedded_ipv4(address)
        if inner:
            return any(_refused(item) for item in inner)
    return (
        address.is_loopback or address.is_link_local or address.is_private or address.is_multicast
        or address.is_reserved or address.is_unspecified or not address.is_global
    )


def check_url(url: str, *, allow_private: bool | None = None) -> list[str]:
    """Raise UnsafeURL unless every address the host resolves to is a public unicast one.

    Returns the vetted addresses (empty when private destinations are allowed), so that
    the delivery connects to an address that was checked, not to a fresh DNS answer.
    """
    if allow_private is None:
        allow_private = settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeURL("Enter a valid http or https URL.") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UnsafeURL("Enter a valid http or https URL.")
    if parts.username or parts.password:
        raise UnsafeURL("Credentials in the URL are not allowed.")
    if allow_private:
        return []
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeURL(f"The host {parts.hostname!r} cannot be resolved.") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if _refused(address):
            raise UnsafeURL(f"The host {parts.hostname!r} resolves to a non-public address ({address}).")
        addresses.append(str(address))
    return addresses


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return "sha256=" + digest


def verify(secret: str, timestamp: str, body: bytes, signature: str, *, tolerance: int = 300) -> bool:
    """What a receiver does (documented in docs/api.md); used by the tests."""
    if abs(time.time() - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx code


def _pinned(connection_class, address: str):
    """A connection class that dials the vetted address (TLS still checks the host name)."""

    def make(host, **kwargs):
        connection = connection_class(host, **kwargs)
        connection._create_connection = lambda target, *args, **kw: socket.create_connection(
            (address, target[1]), *args, **kw
        )
        return connection

    return make


class _PinnedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, address: str):
        super().__init__()
        self.address = address

    def http_open(self, req):
        return self.do_open(_pinned(http.client.HTTPConnection, self.address), req)


class _PinnedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, address: str):
        super().__init__()
        self.address = address

    def https_open(self, req):
        return self.do_open(_pinned(http.client.HTTPSConnection, self.address), req,
                            context=self._context)


def post(url: str, body: bytes, headers: dict, *, address: str | None = None) -> int:
    """POST (to `address` when given) and return the status code; raises URLError/OSError on transport failures."""
    # No proxies from the environment: the connection must go to the address that was checked.
    handlers = [_NoRedirects, urllib.request.ProxyHandler({})]
    if address:
        handlers += [_PinnedHTTPHandler(address), _PinnedHTTPSHandler(address)]
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            response.read(65536)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


