"""Another team's incidents answer 404 on every endpoint, for keys and for browser sessions."""
import pytest
from django.core.files.base import ContentFile

from jobs.models import Artifact

pytestmark = pytest.mark.django_db


@pytest.fixture
def alpha_incident(alpha, make_incident):
    from tests.api.conftest import DIAGNOSIS

    incident = make_incident(alpha, diagnosis=DIAGNOSIS, job_id="alpha-42")
    artifact = Artifact(incident=incident, original_name="rank1.log", size=5, sha256="0" * 64)
    artifact.file.save("rank1.log", ContentFile(b"hello"), save=True)
    return incident


def _paths(incident):
    artifact = incident.artifacts.get()
    base = f"/api/v1/incidents/{incident.pk}/"
    return [base, base + "timeline/", base + "memory/", base + "artifacts/",
            base + f"artifacts/{artifact.pk}/download/"]


def test_it_shows_alpha_incidents_to_alpha_keys_alice_and_bob(alpha_incident, alpha_api, client, alice, bob):
    for path in _paths(alpha_incident):
        assert alpha_api.get(path).status_code == 200, path
    for user in (alice, bob):
        client.force_login(user)
        for path in _paths(alpha_incident):
            assert client.get(path).status_code == 200, (user, path)


def test_it_answers_404_to_charlie_and_bravo_keys(alpha_incident, bravo_api, client, charlie):
    client.force_login(charlie)
    for caller in (bravo_api, client):
        for path in _paths(alpha_incident):
            response = caller.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] == "not_found"


def test_it_lists_only_the_callers_team(alpha_incident, bravo, make_incident, bravo_api, alpha_api):
    bravo_incident = make_incident(bravo, job_id="bravo-1")
    assert [row["id"] for row in alpha_api.get("/api/v1/incidents/").json()["results"]] == [alpha_incident.pk]
    assert [row["id"] for row in bravo_api.get("/api/v1/incidents/").json()["results"]] == [bravo_incident.pk]


def test_it_does_not_serve_another_incidents_artifact_through_an_own_incident(
    alpha_incident, bravo, make_incident, bravo_api
):
    own = make_incident(bravo)
    foreign_artifact = alpha_incident.artifacts.get()
    response = bravo_api.get(f"/api/v1/incidents/{own.pk}/artifacts/{foreign_artifact.pk}/download/")
    assert response.status_code == 404
