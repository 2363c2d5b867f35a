"""The seed case: alpaca rows fed to a ShareGPT loader (KeyError 'conversations' on rank 1)."""
import json

import pytest

from jobs.models import Artifact
from repro import runner
from repro.models import ReproRun
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_runtime")]


@pytest.fixture
def seed(alpha):
    return diagnosed_incident(
        alpha, log=(DEMO / "keyerror-2rank.log").read_text(), command=(DEMO / "keyerror-2rank.command.txt").read_text(),
        data=(DEMO / "keyerror-2rank.data.json").read_bytes(), data_name="train_alpaca.json")


def test_the_seed_case_is_reproduced_converted_and_the_fix_verified(seed):
    assert seed.diagnosis.category == "data_schema"
    assert runner.reproduce(seed.pk) == "done"
    runs = list(seed.repro_runs.order_by("id"))
    assert [(r.kind, r.status, r.fix_kind) for r in runs] == [
        ("data_check", "reproduced", ""), ("data_check", "passed", "convert_data_format")]
    reproduction, check = runs
    assert reproduction.reproduced is True and reproduction.verdict["category"] == "data_schema"
    assert reproduction.verdict["exception"] == "KeyError"
    assert reproduction.details["expected"] == "sharegpt" and reproduction.details["described"]["styles"] == {"alpaca": 2}
    assert [row["line"] for row in reproduction.details["bad_rows"]] == [2, 3]  # line numbers in the file
    assert "KeyError: 'conversations'" in reproduction.log_tail
    assert reproduction.log.kind == "repro_log" and b"KeyError" in reproduction.log.file.read()
    # the converted file, offered for download, is ShareGPT and loads through the same loader
    assert check.verified is True and check.attempt_of_id == reproduction.pk
    converted = json.loads(check.output.file.read())
    assert converted[0]["conversations"][0] == {"from": "human", "value": "Give three tips for staying healthy."}
    assert check.output.original_name == "train_alpaca.sharegpt.json"
    seed.diagnosis.refresh_from_db()
    top = seed.diagnosis.data["fixes"][0]
    assert top["kind"] == "convert_data_format" and top["verified"] is True
    # a run's log is never taken for an incident log by a later diagnosis
    assert not seed.artifacts.filter(kind=Artifact.Kind.LOG, original_name__startswith="repro-").exists()


def test_a_sample_that_already_fits_does_not_reproduce_a_data_failure(alpha):
    rows = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}] * 3
    incident = diagnosed_incident(alpha, log=(DEMO / "keyerror-2rank.log").read_text(), data=json.dumps(rows).encode())
    runner.reproduce(incident.pk)
    run = incident.repro_runs.get()
    assert run.status == ReproRun.Status.NOT_REPRODUCED and run.reproduced is False
    assert run.details["bad_count"] == 0
    incident.diagnosis.refresh_from_db()
    assert incident.diagnosis.data["fixes"][0]["verified"] is None  # never a fake pass
