"""Story: alpha's scheduler reads the knowledge base and records a resolution; bravo's key sees none of it."""
import pytest

from knowledge.models import Problem

pytestmark = pytest.mark.django_db


def test_it_lists_only_the_teams_problems_newest_seen_first(alpha, bravo, recorded_incident, api_as):
    recorded_incident(alpha, "'alpha_field'")
    recorded_incident(alpha, "'beta_field'")
    recorded_incident(bravo, "'gamma_field'")
    body = api_as(alpha).get("/api/v1/problems/").json()
    assert body["count"] == 2
    assert [row["title"] for row in body["results"]] == ["KeyError: 'beta_field'", "KeyError: 'alpha_field'"]
    assert body["results"][0]["occurrences"] == 1 and body["results"][0]["status"] == "open"


def test_it_filters_the_list(alpha, recorded_incident, api_as):
    recorded_incident(alpha, "'alpha_field'")
    recorded_incident(alpha, category="oom", exception="OutOfMemoryError", message="CUDA")
    api = api_as(alpha)
    assert [r["category"] for r in api.get("/api/v1/problems/", {"category": "oom"}).json()["results"]] == ["oom"]
    assert api.get("/api/v1/problems/", {"q": "OutOfMemoryError"}).json()["count"] == 1
    refused = api.get("/api/v1/problems/", {"status": "fixed"})
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "status"


def test_a_patch_sets_the_resolution_and_status(alpha, recorded_incident, api_as):
    incident = recorded_incident(alpha)
    problem = Problem.objects.get()
    api = api_as(alpha)
    response = api.patch(f"/api/v1/problems/{problem.pk}/",
                         {"status": "resolved", "resolution": "Pin transformers==4.44"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["resolution"] == "Pin transformers==4.44" and response.json()["resolved_at"]
    problem.refresh_from_db()
    assert (problem.status, problem.resolution, problem.resolved_by) == ("resolved", "Pin transformers==4.44", None)
    detail = api.get(f"/api/v1/incidents/{incident.pk}/").json()
    assert detail["problem"] == {"id": problem.pk, "title": problem.title, "status": "resolved",
                                 "occurrences": 1, "resolution": "Pin transformers==4.44"}


def test_a_signed_in_member_is_recorded_as_the_resolver(alice_client, alice, alpha, recorded_incident):
    recorded_incident(alpha)
    problem = Problem.objects.get()
    response = alice_client.patch(f"/api/v1/problems/{problem.pk}/", {"resolution": "Shorter sequences."},
                                  content_type="application/json")
    assert response.status_code == 200 and response.json()["resolved_by"] == "alice"


def test_it_rejects_bad_patches_in_the_api_error_format(alpha, recorded_incident, api_as):
    from jobs.models import ApiKey

    recorded_incident(alpha)
    url = f"/api/v1/problems/{Problem.objects.get().pk}/"
    invalid = api_as(alpha).patch(url, {"status": "done"}, format="json")
    assert invalid.status_code == 400 and invalid.json()["error"]["field"] == "status"
    read_only = api_as(alpha, scope=ApiKey.Scope.READ).patch(url, {"resolution": "x"}, format="json")
    assert read_only.status_code == 403 and read_only.json()["error"]["code"] == "read_only_key"
    assert api_as(alpha).put(url, {"resolution": "x"}, format="json").status_code == 405
    assert Problem.objects.get().resolution == ""


def test_charlie_gets_404_on_alices_problem(alice, alpha, bravo, charlie, recorded_incident, api_as, client):
    recorded_incident(alpha)
    url = f"/api/v1/problems/{Problem.objects.get().pk}/"
    bravo_api = api_as(bravo)
    assert bravo_api.get(url).json()["error"]["code"] == "not_found"
    assert bravo_api.patch(url, {"resolution": "mine now"}, format="json").status_code == 404
    assert bravo_api.get("/api/v1/problems/").json()["count"] == 0
    client.force_login(charlie)
    assert client.get(url).status_code == 404
    assert Problem.objects.get().resolution == ""


def test_it_needs_a_key(alpha, recorded_incident, client):
    recorded_incident(alpha)
    assert client.get("/api/v1/problems/").status_code == 401


def test_the_list_has_no_query_per_problem(alpha, recorded_incident, api_as, django_assert_max_num_queries):
    for n in range(12):
        recorded_incident(alpha, f"'field_{chr(97 + n)}'")
    api = api_as(alpha)
    with django_assert_max_num_queries(5):
        assert api.get("/api/v1/problems/").status_code == 200
