"""Webhooks: a team's standing endpoints and the record of every delivery.

WebhookDelivery.status is a small state machine changed by the delivery task:

    pending --2xx--> delivered
            --4xx, redirect, refused address, retries exhausted--> failed
            --5xx, timeout, connection error--> pending (attempts + 1, retried with backoff)
"""
import secrets

from django.db import models

from jobs.models.incidents import Incident
from jobs.models.teams import Team, TeamScopedQuerySet


def new_webhook_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class WebhookEndpoint(models.Model):
    """A URL that receives every finished incident of the team, signed with its own secret."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100, default=new_webhook_secret)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["team", "url"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="webhook_deliveries")
    # NULL for the incident's own callback_url.
    endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    url = models.URLField(max_length=500)
    event = models.CharField(max_length=40, default="incident.finished")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} -> {self.url} ({self.status})"
