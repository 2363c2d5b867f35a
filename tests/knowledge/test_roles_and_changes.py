"""Story: inside team Alpha, alice (admin) merges and splits, bob (member) resolves, vera (viewer) only
reads; every change is recorded and can be undone, on the pages and through the API."""
import pytest
from django.test import Client
from django.urls import reverse

from jobs.models import Membership
from knowledge.models import GroupingAction, Problem, Runbook

pytestmark = pytest.mark.django_db


@pytest.fixture
def vera(alpha):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("vera", "vera@example.com", "correct-horse-battery")
    Membership.objects.create(team=alpha, user=user, role=Membership.Role.VIEWER)
    return user


def client_for(user):
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def two_problems(alpha, recorded_incident):
    a = recorded_incident(alpha, "'alpha_field'", job_id="job-a")
    b = recorded_incident(alpha, "'beta_field'", job_id="job-b")
    return a.problems.get(), b.problems.get(), a, b


def test_a_viewer_reads_but_cannot_resolve_merge_or_edit_runbooks(vera, two_problems):
    first, second, *_ = two_problems
    browser = client_for(vera)
    page = browser.get(reverse("knowledge:problem_detail", args=[first.pk]))
    assert page.status_code == 200 and "reads the knowledge base" in page.content.decode()
    assert browser.post(reverse("knowledge:problem_detail", args=[first.pk]),
                        {"status": "resolved", "resolution": "x"}).status_code == 403
    assert browser.post(reverse("knowledge:problem_merge", args=[first.pk]), {"problems": str(second.pk)}).status_code == 403
    assert browser.post(reverse("knowledge:runbook_detail", args=["gpu_oom"]), {"body": "mine"}).status_code == 403
    assert browser.post(reverse("knowledge:problem_rename", args=[first.pk]), {"title": "x"}).status_code == 403
    assert Problem.objects.get(pk=first.pk).status == "open" and not Runbook.objects.exists()


def test_a_member_resolves_with_a_suggested_fix_but_cannot_merge(bob, alpha, recorded_incident):
    fixes = [{"kind": "convert_data_format", "title": "Convert the data to sharegpt"},
             {"kind": "fix_data_file", "title": "Drop the bad rows"}]
    problem = recorded_incident(alpha, fixes=fixes).problems.get()
    other = recorded_incident(alpha, "'beta_field'").problems.get()
    browser = client_for(bob)
    page = browser.get(reverse("knowledge:problem_detail", args=[problem.pk])).content.decode()
    assert "convert_data_format: Convert the data to sharegpt" in page  # offered as the fix that worked
    response = browser.post(reverse("knowledge:problem_detail", args=[problem.pk]),
                            {"status": "resolved", "resolution": "Converted with the **CLI**.", "fix_choice": "0",
                             "fix_summary": ""})
    assert response.status_code == 302
    problem.refresh_from_db()
    assert (problem.status, problem.fix_kind, problem.fix_summary, problem.resolved_by) == (
        "resolved", "convert_data_format", "Convert the data to sharegpt", bob)
    page = browser.get(reverse("knowledge:problem_detail", args=[problem.pk])).content.decode()
    assert "Fix that worked (convert_data_format):</strong> Convert the data to sharegpt" in page
    assert "Converted with the <strong>CLI</strong>." in page and "by bob" in page
    assert browser.post(reverse("knowledge:problem_merge", args=[problem.pk]), {"problems": str(other.pk)}).status_code == 403
    browser.post(reverse("knowledge:problem_detail", args=[problem.pk]),
                 {"status": "resolved", "resolution": "", "fix_choice": "manual", "fix_summary": "Re-exported the file"})
    problem.refresh_from_db()
    assert (problem.fix_kind, problem.fix_summary) == ("manual", "Re-exported the file")


def test_an_admin_merges_splits_and_undoes_on_the_page(alice, two_problems):
    first, second, a, b = two_problems
    browser = client_for(alice)
    browser.post(reverse("knowledge:problem_merge", args=[first.pk]), {"problems": f"#{second.pk}"})
    assert Problem.objects.get(pk=second.pk).merged_into_id == first.pk
    # The merged problem's page leads to the one it joined.
    assert browser.get(reverse("knowledge:problem_detail", args=[second.pk])).url == reverse(
        "knowledge:problem_detail", args=[first.pk])
    page = browser.get(reverse("knowledge:problem_detail", args=[first.pk])).content.decode()
    assert f"#{second.pk} merged into #{first.pk} by alice" in page and "Undo" in page
    response = browser.post(reverse("knowledge:problem_split", args=[first.pk]), {"incidents": [str(b.pk)]})
    new = Problem.objects.exclude(pk__in=[first.pk, second.pk]).get()
    assert response.url == reverse("knowledge:problem_detail", args=[new.pk])
    assert list(new.incidents.values_list("pk", flat=True)) == [b.pk]
    merge = GroupingAction.objects.get(kind="merge")
    browser.post(reverse("knowledge:action_undo", args=[merge.pk]))
    merge.refresh_from_db()
    assert merge.undone_by == alice and Problem.objects.get(pk=second.pk).merged_into is None


def test_charlie_cannot_touch_alphas_problems_or_changes(charlie, alice, two_problems):
    first, second, *_ = two_problems
    from knowledge import services

    [action] = services.merge(first, [second], user=alice)
    browser = client_for(charlie)
    assert browser.get(reverse("knowledge:problem_detail", args=[first.pk])).status_code == 404
    assert browser.post(reverse("knowledge:problem_merge", args=[first.pk]), {"problems": "1"}).status_code == 404
    assert browser.post(reverse("knowledge:action_undo", args=[action.pk])).status_code == 404
    assert browser.get(reverse("knowledge:search"), {"q": "alpha_field"}).content.decode().count("alpha_field") <= 1


def test_the_api_merges_splits_and_undoes_for_admins_only(alice, bob, alpha, two_problems, api_as):
    from rest_framework.test import APIClient

    first, second, a, b = two_problems
    key = api_as(alpha)  # a write key acts as a member: it may resolve, not merge
    refused = key.post(f"/api/v1/problems/{first.pk}/merge/", {"problems": [second.pk]}, format="json")
    assert refused.status_code == 403
    assert key.patch(f"/api/v1/problems/{first.pk}/", {"title": "Alpha field missing"}, format="json").status_code == 200
    assert Problem.objects.get(pk=first.pk).title == "Alpha field missing"
    admin = APIClient()
    admin.force_login(alice)
    merged = admin.post(f"/api/v1/problems/{first.pk}/merge/", {"problems": [second.pk]}, format="json")
    assert merged.status_code == 200, merged.content
    assert merged.json()[0]["kind"] == "merge" and merged.json()[0]["actor"] == "alice"
    changes = admin.get(f"/api/v1/problems/{first.pk}/changes/").json()
    assert [row["kind"] for row in changes] == ["merge"]
    split = admin.post(f"/api/v1/problems/{first.pk}/split/", {"incidents": [b.pk]}, format="json")
    assert split.status_code == 201 and split.json()["occurrences"] == 1
    empty = admin.post(f"/api/v1/problems/{first.pk}/split/", {"incidents": [a.pk]}, format="json")
    assert empty.status_code == 400 and "at least one" in empty.json()["error"]["message"]
    undone = admin.post(f"/api/v1/knowledge/changes/{changes[0]['id']}/undo/")
    assert undone.status_code == 200 and undone.json()["undone_by"] == "alice"
    again = admin.post(f"/api/v1/knowledge/changes/{changes[0]['id']}/undo/")
    assert again.status_code == 400
    member = APIClient()
    member.force_login(bob)
    assert member.post(f"/api/v1/problems/{first.pk}/merge/", {"problems": [second.pk]}, format="json").status_code == 403


def test_a_read_key_cannot_resolve(alpha, two_problems, api_as):
    first, *_ = two_problems
    response = api_as(alpha, scope="read").patch(f"/api/v1/problems/{first.pk}/", {"status": "resolved"}, format="json")
    assert response.status_code == 403


def test_the_api_recognises_an_incident_and_serves_runbooks(alice, alpha, bravo, recorded_incident, api_as):
    from rest_framework.test import APIClient

    first = recorded_incident(alpha)
    later = recorded_incident(alpha)
    Problem.objects.update(resolution="Convert the data.")
    body = api_as(alpha).get(f"/api/v1/knowledge/incidents/{later.pk}/").json()
    assert body["known"] and body["problem"]["occurrences"] == 2 and body["problem"]["resolution"] == "Convert the data."
    assert body["runbook"]["category"] == "data_schema" and not body["runbook"]["edited"]
    assert api_as(bravo).get(f"/api/v1/knowledge/incidents/{first.pk}/").status_code == 404
    admin = APIClient()
    admin.force_login(alice)
    put = admin.put("/api/v1/knowledge/runbooks/gpu_oom/", {"body": "Call **Dana**."}, format="json")
    assert put.status_code == 200 and put.json()["edited"]
    assert api_as(alpha).get("/api/v1/knowledge/runbooks/gpu_oom/").json()["body"] == "Call **Dana**."
    assert api_as(bravo).get("/api/v1/knowledge/runbooks/gpu_oom/").json()["edited"] is False
    assert api_as(alpha).put("/api/v1/knowledge/runbooks/gpu_oom/", {"body": "x"}, format="json").status_code == 403
    assert api_as(alpha).get("/api/v1/knowledge/runbooks/no_such/").status_code == 404
