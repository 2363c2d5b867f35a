"""Webhooks: push a finished incident to its callback_url and the team's endpoints.

This module is the task side: which deliveries a finished incident gets, the payload, and the
delivery task with its retries. The address guard and the signed POST live in
jobs.webhook_transport (re-exported here). Receivers recompute the signature and reject stale
timestamps. Callback URLs are signed with the team's callback secret (team_callback_secret);
endpoints with their own secret.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import time
import urllib.error
from datetime import timedelta
from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.dispatch import receiver
from django.utils import timezone

from jobs.signals import incident_finished
from jobs.webhook_transport import (  # noqa: F401 - re-exported: the guard and the transport
    TIMEOUT_SECONDS,
    UnsafeURL,
    check_url,
    embedded_ipv4,
    post,
    sign,
    verify,
)

log = logging.getLogger(__name__)

MAX_RETRIES = 6
USER_AGENT = "Triage-Webhook/1.0"


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


class TransientDeliveryError(Exception):
    pass


def _backoff(retries: int) -> int:
    return min(30 * 2**retries, 3600) + random.randint(0, 10)


@shared_task(
    name="jobs.tasks.deliver_webhook", bind=True, max_retries=MAX_RETRIES,
    soft_time_limit=60, time_limit=90, acks_late=True,
)
def deliver_webhook(self, delivery_pk: int, attempt: int | None = None) -> str:
    """POST one delivery. `attempt` is the number of attempts made before this one: the claim
    below only lets the message that expects exactly that count through (None: the first)."""
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
    # The claim: a duplicate message (a re-sent wake-up, a redelivered retry) finds the count moved on.
    attempt = attempt or 0
    if not rows.filter(status=WebhookDelivery.Status.PENDING, attempts=attempt).update(
            attempts=F("attempts") + 1, last_attempt_at=now):
        return "skipped"
    try:
        status_code = post(delivery.url, body, headers, address=addresses[0] if addresses else None)
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        return _retry_or_fail(self, rows, None, f"{type(error).__name__}: {reason}", attempt + 1)

    if 200 <= status_code < 300:
        rows.update(status=WebhookDelivery.Status.DELIVERED, status_code=status_code, error="",
                    delivered_at=timezone.now())
        return "delivered"
    if status_code >= 500:
        return _retry_or_fail(self, rows, status_code, f"HTTP {status_code}", attempt + 1)
    # 4xx is the receiver's final answer and a 3xx is a redirect we will not follow.
    rows.update(status=WebhookDelivery.Status.FAILED, status_code=status_code, error=f"HTTP {status_code}")
    return "failed"


def _retry_or_fail(task, rows, status_code, error: str, attempts: int) -> str:
    from jobs.models import WebhookDelivery

    if attempts > task.max_retries or task.request.retries >= task.max_retries:
        rows.update(status=WebhookDelivery.Status.FAILED, status_code=status_code,
                    error=f"{error} (gave up after {attempts} attempts)")
        return "failed"
    rows.update(status_code=status_code, error=error)
    raise task.retry(args=[rows.get().pk, attempts], countdown=_backoff(attempts - 1),
                     exc=TransientDeliveryError(error))


LOST_AFTER_S = 600  # a pending delivery not tried for this long (beyond its backoff) lost its message


def sweep_deliveries() -> int:
    """Re-enqueue pending deliveries whose message was lost (the broker was down when the incident
    finished, or forgot a scheduled retry). Called by jobs.tasks.sweep_incidents; the claim in
    deliver_webhook keeps a duplicate from posting twice."""
    from jobs.models import WebhookDelivery

    now = timezone.now()
    never_tried = Q(attempts=0, created_at__lt=now - timedelta(seconds=LOST_AFTER_S))
    retry_lost = Q(attempts__gt=0, last_attempt_at__lt=now - timedelta(seconds=3600 + 10 + LOST_AFTER_S))
    sent = 0
    lost = WebhookDelivery.objects.filter(never_tried | retry_lost, status=WebhookDelivery.Status.PENDING)
    for delivery_pk, attempts in lost.values_list("pk", "attempts")[:200]:
        try:
            deliver_webhook.delay(delivery_pk, attempts)
        except Exception:  # noqa: BLE001 - the broker is still down; the next sweep tries again
            log.warning("could not re-enqueue webhook delivery %s", delivery_pk)
            break
        sent += 1
    return sent
