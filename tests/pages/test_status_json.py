"""Story: the incident page polls the status JSON while the worker runs."""
from django.urls import reverse

from jobs.models import Incident
from tests.pages.factories import sample_diagnosis


def test_it_reports_the_state_machine(alice_client, alpha, make_incident):
    incident = make_incident(alpha)
    url = reverse("jobs:incident_status", args=[incident.pk])

    assert alice_client.get(url).json()["status"] == "queued"
    Incident.objects.filter(pk=incident.pk).update(status="diagnosing")
    data = alice_client.get(url).json()
    assert data["status"] == "diagnosing" and data["finished"] is False

    Incident.objects.filter(pk=incident.pk).update(status="diagnosed", category="gpu_oom", failing_rank=3)
    data = alice_client.get(url).json()
    assert data == data | {"status": "diagnosed", "finished": True, "category": "gpu_oom", "failing_rank": 3,
                           "url": reverse("jobs:incident_detail", args=[incident.pk])}


def test_it_is_404_for_another_team(charlie_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2))
    assert charlie_client.get(reverse("jobs:incident_status", args=[incident.pk])).status_code == 404


def test_it_requires_login(client, alpha, make_incident):
    incident = make_incident(alpha)
    assert client.get(reverse("jobs:incident_status", args=[incident.pk])).status_code == 302
