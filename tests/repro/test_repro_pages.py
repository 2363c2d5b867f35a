"""The incident page's repro section, its live JSON, the API fields, and runs that fail safely."""
import json

import pytest

from jobs.models import Incident
from repro import runner, tasks
from repro.models import ReproRun
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident_with_runs(alpha):
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text(),
                                  command=(DEMO / "keyerror-2rank.command.txt").read_text())
    done = ReproRun.objects.create(
        incident=incident, kind="data_check", status="reproduced", duration_s=0.4, peak_memory_mb=30.0,
        verdict={"category": "data_schema", "exception": "KeyError", "summary": "rows lack 'conversations'"},
        details={"bad_rows": [{"line": 2, "error": "KeyError: 'conversations'"}]},
        log_tail="<script>alert('x')</script> KeyError: 'conversations'")
    ReproRun.objects.create(incident=incident, kind="data_check", status="passed", fix_kind="convert_data_format",
                            fix_index=0, attempt_of=done)
    ReproRun.objects.create(incident=incident, kind="launch", status="running", log_tail="step 1")
    return incident


def test_the_page_shows_the_runs_escaped_and_polls_while_one_runs(client, alice, incident_with_runs):
    client.force_login(alice)
    page = client.get(f"/incidents/{incident_with_runs.pk}/").content.decode()
    assert 'id="repro-runs"' in page and "js/repro_runs.js" in page
    assert "line 2 (KeyError: &#x27;conversations&#x27;)" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "status-running" in page


def test_the_runs_json_gives_status_elapsed_and_tail_to_members_only(client, alice, charlie, incident_with_runs):
    client.force_login(alice)
    body = client.get(f"/repro/incidents/{incident_with_runs.pk}/runs.json").json()
    assert body["running"] is True
    first, check, live = body["runs"]
    assert first["reproduced"] is True and first["elapsed_s"] == 0.4 and "KeyError" in first["log_tail"]
    assert check["verified"] is True and check["fix_kind"] == "convert_data_format"
    assert live["status"] == "running" and live["finished"] is False
    client.force_login(charlie)
    assert client.get(f"/repro/incidents/{incident_with_runs.pk}/runs.json").status_code == 404


def test_the_api_takes_verified_from_the_runs(alpha, alice, incident_with_runs):
    from rest_framework.test import APIClient

    from jobs.models import ApiKey

    _, key = ApiKey.issue(alpha, name="read", created_by=alice)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    body = api.get(f"/api/v1/incidents/{incident_with_runs.pk}/").json()
    assert body["diagnosis"]["fixes"][0]["verified"] is True  # stored data still says None: runs decide
    assert [run["status"] for run in body["repro_runs"]] == ["reproduced", "passed", "running"]
    assert body["repro_runs"][1]["verified"] is True and body["repro_runs"][0]["reproduced"] is True


def test_a_broken_sandbox_records_an_error_and_leaves_the_incident_alone(alpha, settings, tmp_path):
    settings.TRIAGE_SANDBOX_RUNTIME = str(tmp_path / "missing-runtime")
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text(),
                                  data=(DEMO / "keyerror-2rank.data.json").read_bytes())
    before = Incident.objects.filter(pk=incident.pk).values().get()
    assert tasks.run_repro(incident.pk) == "done"
    run = incident.repro_runs.get()
    assert run.status == ReproRun.Status.ERROR and "make sandbox-runtime" in run.reason
    assert Incident.objects.filter(pk=incident.pk).values().get() == before
    incident.diagnosis.refresh_from_db()
    assert incident.diagnosis.data["fixes"][0]["verified"] is None


def test_a_crash_inside_the_task_closes_open_runs_without_touching_the_incident(alpha, monkeypatch):
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text())
    ReproRun.objects.create(incident=incident, kind="launch", status="running")

    def explode(pk):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runner, "reproduce", explode)
    assert tasks.run_repro(incident.pk) == "error"
    run = incident.repro_runs.get()
    assert run.status == "error" and "disk on fire" in run.reason
    assert Incident.objects.get(pk=incident.pk).status == "diagnosed"


def test_the_signal_queues_a_repro_only_for_a_diagnosis(alpha, monkeypatch):
    from jobs.signals import incident_finished

    queued = []
    monkeypatch.setattr(tasks.run_repro, "delay", lambda pk: queued.append(pk))
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text())
    incident_finished.send(sender=Incident, incident=incident)
    failed = Incident.objects.create(team=alpha, status="failed")
    incident_finished.send(sender=Incident, incident=failed)
    assert queued == [incident.pk]


def test_a_dataset_info_file_is_recognised_and_explained(alpha):
    info = {"my_chats": {"file_name": "chats.json", "formatting": "sharegpt",
                         "columns": {"messages": "conversations"}}}
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text(),
                                  data=json.dumps(info).encode(), data_name="dataset_info.json")
    runner.reproduce(incident.pk)
    run = incident.repro_runs.get()
    assert run.status == "not_reproduced" and "dataset_info" in run.reason
    assert run.details["described"]["dataset_info"]["my_chats"]["formatting"] == "sharegpt"


def test_a_new_repro_replaces_the_runs_of_an_earlier_diagnosis(alpha, settings, tmp_path):
    settings.TRIAGE_SANDBOX_RUNTIME = str(tmp_path / "missing-runtime")
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text(),
                                  data=(DEMO / "keyerror-2rank.data.json").read_bytes())
    old = ReproRun.objects.create(incident=incident, kind="data_check", status="passed",
                                  fix_kind="convert_data_format", fix_index=0)
    stuck = ReproRun.objects.create(incident=incident, kind="launch", status="running")
    ReproRun.objects.filter(pk=stuck.pk).update(created_at=stuck.created_at.replace(year=2020))
    runner.reproduce(incident.pk)
    assert not ReproRun.objects.filter(pk__in=[old.pk, stuck.pk]).exists()
    assert list(incident.repro_runs.values_list("status", flat=True)) == ["error"]


def test_a_redelivered_task_skips_while_a_recent_run_is_open(alpha):
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text())
    ReproRun.objects.create(incident=incident, kind="launch", status="running")
    assert runner.reproduce(incident.pk) == "skipped"
    assert incident.repro_runs.get().status == "running"


def test_one_kind_of_run_failing_is_recorded_and_the_others_still_run(alpha, monkeypatch):
    from repro import datacheck

    def broken(path):
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(datacheck, "describe", broken)
    incident = diagnosed_incident(alpha, log=(DEMO / "nccl-timeout.log").read_text(),
                                  data=(DEMO / "keyerror-2rank.data.json").read_bytes())
    assert runner.reproduce(incident.pk) == "done"
    runs = list(incident.repro_runs.order_by("id"))
    assert [(r.kind, r.status) for r in runs] == [("data_check", "error"), ("unsupported", "not_reproduced")]
    assert "parser exploded" in runs[0].reason
