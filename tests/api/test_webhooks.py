"""Webhooks: signed POSTs to a real local receiver, retried on 5xx, never on 4xx, recorded per attempt."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jobs.models import WebhookDelivery, WebhookEndpoint
from jobs.signals import incident_finished
from jobs.webhooks import deliver_webhook, team_callback_secret, verify
from tests.api.conftest import DIAGNOSIS

pytestmark = pytest.mark.django_db


class Receiver:
    """An http.server on 127.0.0.1 answering the queued status codes (200 once they run out)."""

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def allow_private(settings):
    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def no_backoff(monkeypatch):
    monkeypatch.setattr("jobs.webhooks._backoff", lambda retries: 0)


def _finish(incident, django_capture_on_commit_callbacks):
    """Send incident_finished as the diagnosis task does, without enqueuing to the broker."""
    with django_capture_on_commit_callbacks(execute=False):
        incident_finished.send(sender=type(incident), incident=incident)
    return list(WebhookDelivery.objects.filter(incident=incident).order_by("id"))


def test_it_posts_a_signed_verdict_to_the_callback_url(
    alpha, make_incident, allow_private, django_capture_on_commit_callbacks
):
    with Receiver() as receiver:
        incident = make_incident(alpha, diagnosis=DIAGNOSIS, job_id="42", callback_url=receiver.url)
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
    [(headers, body)] = receiver.requests
    assert verify(team_callback_secret(alpha), headers["X-Triage-Timestamp"], body, headers["X-Triage-Signature"])
    assert not verify("wrong", headers["X-Triage-Timestamp"], body, headers["X-Triage-Signature"])
    sent = json.loads(body)
    assert sent["event"] == "incident.finished"
    assert sent["incident"]["id"] == incident.pk and sent["incident"]["diagnosis"] == DIAGNOSIS
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("delivered", 1, 200)


def test_it_signs_endpoint_deliveries_with_the_endpoint_secret(
    alpha, bravo, make_incident, allow_private, django_capture_on_commit_callbacks
):
    with Receiver() as receiver:
        endpoint = WebhookEndpoint.objects.create(team=alpha, url=receiver.url)
        WebhookEndpoint.objects.create(team=alpha, url=receiver.url + "/off", active=False)
        WebhookEndpoint.objects.create(team=bravo, url=receiver.url + "/bravo")
        incident = make_incident(alpha, diagnosis=DIAGNOSIS)
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        assert delivery.endpoint == endpoint
        deliver_webhook.apply(args=[delivery.pk])
    [(headers, body)] = receiver.requests
    assert verify(endpoint.secret, headers["X-Triage-Timestamp"], body, headers["X-Triage-Signature"])


def test_it_retries_a_500_and_then_delivers(alpha, make_incident, allow_private, no_backoff,
                                            django_capture_on_commit_callbacks):
    with Receiver([500, 503]) as receiver:
        incident = make_incident(alpha, diagnosis=DIAGNOSIS, callback_url=receiver.url)
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        deliver_webhook.apply(args=[delivery.pk])
    assert len(receiver.requests) == 3
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("delivered", 3, 200)


def test_it_never_retries_a_4xx_or_follows_a_redirect(alpha, make_incident, allow_private,
                                                     django_capture_on_commit_callbacks):
    for status in (400, 302):
        with Receiver([status]) as receiver:
            incident = make_incident(alpha, diagnosis=DIAGNOSIS, callback_url=receiver.url)
            [delivery] = _finish(incident, django_capture_on_commit_callbacks)
            assert deliver_webhook.apply(args=[delivery.pk]).get() == "failed"
        assert len(receiver.requests) == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.status_code) == ("failed", 1, status)


def test_it_retries_connection_errors_and_gives_up(alpha, make_incident, allow_private, no_backoff,
                                                   django_capture_on_commit_callbacks):
    with Receiver() as receiver:
        url = receiver.url
    incident = make_incident(alpha, callback_url=url)  # the receiver is gone: connection refused
    [delivery] = _finish(incident, django_capture_on_commit_callbacks)
    deliver_webhook.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.attempts == deliver_webhook.max_retries + 1
    assert "gave up" in delivery.error


def test_it_refuses_a_private_callback_at_delivery(alpha, make_incident, settings,
                                                  django_capture_on_commit_callbacks):
    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = False
    with Receiver() as receiver:
        incident = make_incident(alpha, callback_url=receiver.url)
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        assert deliver_webhook.apply(args=[delivery.pk]).get() == "refused"
    assert receiver.requests == []
    delivery.refresh_from_db()
    assert delivery.status == "failed" and "non-public" in delivery.error


def test_it_shows_deliveries_in_the_incident_detail(alpha, make_incident, allow_private, alpha_api,
                                                    django_capture_on_commit_callbacks):
    with Receiver() as receiver:
        incident = make_incident(alpha, diagnosis=DIAGNOSIS, callback_url=receiver.url)
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        deliver_webhook.apply(args=[delivery.pk])
    [shown] = alpha_api.get(f"/api/v1/incidents/{incident.pk}/").json()["deliveries"]
    assert shown["status"] == "delivered" and shown["attempts"] == 1 and shown["url"] == receiver.url


def test_it_enqueues_a_delivery_per_target_on_commit(alpha, make_incident, django_capture_on_commit_callbacks,
                                                     monkeypatch):
    queued = []
    monkeypatch.setattr(deliver_webhook, "delay", queued.append)
    WebhookEndpoint.objects.create(team=alpha, url="https://93.184.215.14/hook")
    incident = make_incident(alpha, callback_url="https://93.184.215.14/cb")
    with django_capture_on_commit_callbacks(execute=True):
        incident_finished.send(sender=type(incident), incident=incident)
    assert sorted(queued) == sorted(WebhookDelivery.objects.filter(incident=incident).values_list("pk", flat=True))
    assert len(queued) == 2


def test_it_connects_to_the_address_it_checked(alpha, make_incident, settings, monkeypatch,
                                               django_capture_on_commit_callbacks):
    """A second DNS answer (rebinding) cannot redirect the delivery: the checked address is dialled."""
    import socket

    import jobs.webhook_transport

    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = False
    real_getaddrinfo = socket.getaddrinfo
    lookups = []

    def resolve(host, port, *args, **kwargs):
        if host == "hooks.triage.test":
            lookups.append(host)
            return real_getaddrinfo("127.0.0.1", port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(jobs.webhook_transport, "_refused", lambda address: False)  # pretend 127.0.0.1 is public
    with Receiver() as receiver:
        port = receiver.server.server_address[1]
        incident = make_incident(alpha, callback_url=f"http://hooks.triage.test:{port}/hook")
        [delivery] = _finish(incident, django_capture_on_commit_callbacks)
        assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
    assert lookups == ["hooks.triage.test"]  # resolved once, by the check
    [(headers, _)] = receiver.requests
    assert headers["Host"] == f"hooks.triage.test:{port}"


def test_it_shows_deliveries_in_the_admin(admin_client, alpha, make_incident):
    incident = make_incident(alpha, callback_url="https://93.184.215.14/cb")
    WebhookDelivery.objects.create(incident=incident, url=incident.callback_url, attempts=2, status="failed",
                                   status_code=503, error="HTTP 503")
    listing = admin_client.get("/admin/jobs/webhookdelivery/")
    assert listing.status_code == 200 and b"93.184.215.14" in listing.content
    page = admin_client.get(f"/admin/jobs/incident/{incident.pk}/change/")
    assert page.status_code == 200 and b"HTTP 503" in page.content
