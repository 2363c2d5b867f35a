"""Story: team Alpha moves its knowledge base to a new installation: problems, resolutions, runbooks."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from knowledge import services
from knowledge.models import Problem, Runbook
from knowledge.transfer import TransferError, export_team, import_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def alpha_knowledge(alice, alpha, recorded_incident):
    problem = recorded_incident(alpha).problems.get()
    services.update(problem, user=alice, status="resolved", resolution="Converted with the **CLI**.",
                    fix_kind="convert_data_format", fix_summary="Convert the data")
    recorded_incident(alpha, "'beta_field'")
    Runbook.objects.create(team=alpha, category="gpu_oom", body="Ask Dana first.")
    return problem


def test_an_export_imported_elsewhere_recognises_the_next_incident(alpha, bravo, alpha_knowledge, recorded_incident,
                                                                  tmp_path):
    path = tmp_path / "kb.json"
    call_command("kb_export", alpha.slug, "--out", str(path))
    document = json.loads(path.read_text())
    assert document["format"] == "triage-knowledge" and len(document["problems"]) == 2
    call_command("kb_import", bravo.slug, str(path))
    imported = Problem.objects.get(team=bravo, resolution__contains="CLI")
    assert (imported.status, imported.fix_summary) == ("resolved", "Convert the data")
    assert Runbook.objects.get(team=bravo, category="gpu_oom").body == "Ask Dana first."
    # The same failure at bravo joins the imported problem and shows its resolution.
    incident = recorded_incident(bravo)
    assert incident.problems.get() == imported
    assert services.recognise(incident)["known"]
    # Importing twice adds nothing.
    call_command("kb_import", bravo.slug, str(path))
    assert Problem.objects.filter(team=bravo).count() == 2


def test_import_keeps_the_teams_own_resolution(alpha, bravo, alpha_knowledge, recorded_incident):
    mine = recorded_incident(bravo).problems.get()
    services.update(mine, user=None, status="resolved", resolution="Our own fix.")
    counts = import_team(bravo, export_team(alpha))
    mine.refresh_from_db()
    assert mine.resolution == "Our own fix." and counts["problems_updated"] == 0


@pytest.mark.parametrize("document, message", [
    ({"format": "other"}, "not a knowledge-base export"),
    ({"format": "triage-knowledge", "version": 9}, "unsupported version"),
    ({"format": "triage-knowledge", "version": 1, "problems": [{"status": "exploded"}]}, "unknown status"),
    ({"format": "triage-knowledge", "version": 1, "problems": [{"title": 5}]}, "must be a string"),
    ({"format": "triage-knowledge", "version": 1, "runbooks": [{"category": "gpu_oom"}]}, "needs a category and a body"),
])
def test_a_bad_document_imports_nothing(bravo, document, message):
    with pytest.raises(TransferError, match=message):
        import_team(bravo, document)
    assert not Problem.objects.filter(team=bravo).exists()


def test_the_commands_name_bad_input(alpha, tmp_path):
    with pytest.raises(CommandError, match="no team"):
        call_command("kb_export", "nobody")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("kb_import", alpha.slug, str(broken))


def test_the_page_exports_and_only_admins_import(alice_client, bob_client, alpha, bravo, alpha_knowledge):
    exported = alice_client.get(reverse("knowledge:export"))
    assert exported["Content-Disposition"].startswith("attachment")
    body = exported.content
    upload = SimpleUploadedFile("kb.json", body, content_type="application/json")
    assert bob_client.post(reverse("knowledge:transfer"), {"file": upload}).status_code == 403
    page = alice_client.post(reverse("knowledge:transfer"),
                             {"file": SimpleUploadedFile("kb.json", b"{]", content_type="application/json")},
                             follow=True)
    assert "The file is not JSON." in page.content.decode()


def test_the_api_exports_and_imports(alice, alpha, bravo, charlie, alpha_knowledge, api_as):
    from rest_framework.test import APIClient

    document = api_as(alpha).get("/api/v1/knowledge/export/").json()
    assert {row["title"] for row in document["problems"]} == {"KeyError: 'conversations'", "KeyError: 'beta_field'"}
    admin = APIClient()
    admin.force_login(charlie)  # bravo's admin
    response = admin.post("/api/v1/knowledge/import/", document, format="json")
    assert response.status_code == 200 and response.json()["problems_created"] == 2
    bad = admin.post("/api/v1/knowledge/import/", {"format": "nope"}, format="json")
    assert bad.status_code == 400
    assert api_as(bravo).post("/api/v1/knowledge/import/", document, format="json").status_code == 403
