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
