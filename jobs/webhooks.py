"""Webhooks: push a finished incident to its callback_url and the team's endpoints.

Every POST is signed: X-Triage-Signature = "sha256=" + HMAC-SHA256(secret, timestamp + "." + body),
with the timestamp (unix seconds) in X-Triage-Timestamp. Receivers recompute it and
reject stale timestamps. Callback URLs are signed with the team's callback secret
(team_callback_secret); endpoints with their own secret.

Destinations that resolve to loopback, private, link-local, multicast, reserved or
unspecified addresses are refused (SSRF) unless settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE.
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import random
import socket
import time
import urllib.error
import urllib.request
from functools import partial
from urllib.parse import urlsplit

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.dispatch import receiver
from django.utils import timezone

from jobs.signals import incident_finished

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10
MAX_RETRIES = 6
USER_AGENT = "Triage-Webhook/1.0"


class UnsafeURL(ValueError):
    """The URL is not an http(s) URL or points to an address we refuse to call."""


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
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


def team_callback_secret(team) -> str:
    """The secret that signs deliveries to incidents' callback_url, derived per team."""
    return hmac.new(settings.SECRET_KEY.encode(), f"triage.callback.{team.pk}".encode(), hashlib.sha256).hexdigest()


def payload(incident, delivery) -> dict:
    diagnosis = getattr(incident, "diagnosis", None)
    return {
        "event": delivery.event,
        "delivery_id": delivery.pk,
        "incident": {
            "id": incident.pk,
            "status": incident.status,
            "status_reason": incident.status_reason,
            "title": incident.title,
            "job_id": incident.job_id,
            "attempt": incident.attempt,
            "scheduler": incident.scheduler,
            "cluster": incident.cluster,
            "category": incident.category,
            "summary": incident.summary,
            "failing_rank": incident.failing_rank,
            "url": f"/api/v1/incidents/{incident.pk}/",
            "diagnosis": diagnosis.data if diagnosis is not None else None,
        },
    }


@receiver(incident_finished, dispatch_uid="jobs.webhooks.enqueue_deliveries")
def enqueue_deliveries(sender, incident, **kwargs):
    from jobs.models import WebhookDelivery, WebhookEndpoint

    targets = [(None, incident.callback_url)] if incident.callback_url else []
    targets += [(ep, ep.url) for ep in WebhookEndpoint.objects.filter(team_id=incident.team_id, active=True)]
    for endpoint, url in targets:
        delivery = WebhookDelivery.objects.create(incident=incident, endpoint=endpoint, url=url)
        transaction.on_commit(partial(_enqueue, delivery.pk))


def _enqueue(delivery_pk: int) -> None:
    try:
        deliver_webhook.delay(delivery_pk)
    except Exception:  # a broker outage must not break the diagnosis that sent the signal
        log.exception("could not enqueue webhook delivery %s", delivery_pk)


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


class TransientDeliveryError(Exception):
    pass


def _backoff(retries: int) -> int:
    return min(30 * 2**retries, 3600) + random.randint(0, 10)


@shared_task(
    name="jobs.tasks.deliver_webhook", bind=True, max_retries=MAX_RETRIES,
    soft_time_limit=60, time_limit=90, acks_late=True,
)
def deliver_webhook(self, delivery_pk: int) -> str:
    from jobs.models import WebhookDelivery

    delivery = (
        WebhookDelivery.objects.select_related("incident__team", "incident__diagnosis", "endpoint")
        .filter(pk=delivery_pk).first()
    )
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return "skipped"
    incident = delivery.incident
    now = timezone.now()
    rows = WebhookDelivery.objects.filter(pk=delivery.pk)
    try:
        addresses = check_url(delivery.url)
    except UnsafeURL as refusal:
        rows.update(status=WebhookDelivery.Status.FAILED, error=str(refusal), last_attempt_at=now)
        return "refused"

    secret = delivery.endpoint.secret if delivery.endpoint else team_callback_secret(incident.team)
    body = json.dumps(payload(incident, delivery), separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Triage-Event": delivery.event,
        "X-Triage-Delivery": str(delivery.pk),
        "X-Triage-Timestamp": timestamp,
        "X-Triage-Signature": sign(secret, timestamp, body),
    }
    rows.update(attempts=F("attempts") + 1, last_attempt_at=now)
    try:
        status_code = post(delivery.url, body, headers, address=addresses[0] if addresses else None)
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        return _retry_or_fail(self, rows, None, f"{type(error).__name__}: {reason}")

    if 200 <= status_code < 300:
        rows.update(status=WebhookDelivery.Status.DELIVERED, status_code=status_code, error="",
                    delivered_at=timezone.now())
        return "delivered"
    if status_code >= 500:
        return _retry_or_fail(self, rows, status_code, f"HTTP {status_code}")
    # 4xx is the receiver's final answer and a 3xx is a redirect we will not follow.
    rows.update(status=WebhookDelivery.Status.FAILED, status_code=status_code, error=f"HTTP {status_code}")
    return "failed"


def _retry_or_fail(task, rows, status_code, error: str) -> str:
    from jobs.models import WebhookDelivery

    if task.request.retries >= task.max_retries:
        rows.update(status=WebhookDelivery.Status.FAILED, status_code=status_code,
                    error=f"{error} (gave up after {task.request.retries + 1} attempts)")
        return "failed"
    rows.update(status_code=status_code, error=error)
    raise task.retry(countdown=_backoff(task.request.retries), exc=TransientDeliveryError(error))
