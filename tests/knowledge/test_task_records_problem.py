"""Story: the same data bug kills two runs of one job; the worker files both under one problem."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.tasks import diagnose_incident
from jobs.uploads import create_incident
from knowledge.models import Problem
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db
RUNS = REPO_ROOT / "tests" / "fixtures" / "cpu_runs"


def upload_run(team, user, folder):
    case = RUNS / folder
    return create_incident(
        team=team, user=user, logs=[SimpleUploadedFile("log.txt", (case / "log.txt").read_bytes())],
        command=(case / "command.txt").read_text().strip(),
        data=SimpleUploadedFile("data_sample.json", (case / "data_sample.json").read_bytes()),
        meta={"job_id": folder}, enqueue=False,
    )


def test_it_files_two_runs_of_one_failure_under_one_problem(alice, alpha):
    first = upload_run(alpha, alice, "cpu-data-schema-tee")
    second = upload_run(alpha, alice, "cpu-data-schema-tee-run2")
    assert diagnose_incident(first.pk) == "diagnosed"
    assert diagnose_incident(second.pk) == "diagnosed"
    problem = Problem.objects.get()
    assert problem.occurrences == 2
    assert set(problem.incidents.values_list("pk", flat=True)) == {first.pk, second.pk}
    links = problem.occurrence_links.all()
    assert {link.fine_hash for link in links} == {problem.fingerprint}
    assert problem.category == "data_schema" and problem.exception == "KeyError"


def test_a_redelivered_task_does_not_count_twice(alice, alpha):
    incident = upload_run(alpha, alice, "cpu-data-schema-tee")
    diagnose_incident(incident.pk)
    assert diagnose_incident(incident.pk) == "skipped"
    assert Problem.objects.get().occurrences == 1


def upload_logs(team, user, logs, command, job_id):
    return create_incident(
        team=team, user=user, logs=[SimpleUploadedFile(path.name, path.read_bytes()) for path in logs],
        command=command, meta={"job_id": job_id}, enqueue=False,
    )


DEMO = REPO_ROOT / "jobs" / "demo"


def test_the_demo_longchat_incident_and_an_upload_of_the_same_failure_share_a_problem(alice, alpha):
    demo = upload_logs(alpha, alice, [DEMO / "keyerror-2rank.log"], (DEMO / "keyerror-2rank.command.txt").read_text(),
                       "demo-1001")
    upload = upload_run(alpha, alice, "cpu-data-schema-tee")
    assert diagnose_incident(demo.pk) == "diagnosed" and diagnose_incident(upload.pk) == "diagnosed"
    problem = Problem.objects.get()
    assert set(problem.incidents.values_list("pk", flat=True)) == {demo.pk, upload.pk}
    assert problem.title == "KeyError: 'conversations'"


def test_a_custom_loop_stall_and_a_watchdog_timeout_stay_apart_and_keep_their_numbers_out(alice, alpha):
    stall_case = RUNS / "cpu-collective-timeout-tee"
    stall = upload_logs(alpha, alice, [stall_case / "log.txt"], (stall_case / "command.txt").read_text(), "loop")
    watchdog = upload_logs(alpha, alice, [DEMO / "nccl-timeout.log"], (DEMO / "nccl-timeout.command.txt").read_text(),
                           "fsdp")
    assert diagnose_incident(stall.pk) == "diagnosed" and diagnose_incident(watchdog.pk) == "diagnosed"
    assert Problem.objects.count() == 2
    titles = " | ".join(Problem.objects.values_list("title", flat=True))
    assert "10000ms" not in titles and "1800000" not in titles and "<duration>" in titles
