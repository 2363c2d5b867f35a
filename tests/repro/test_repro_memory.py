"""An OOM reproduced on the tiny model under a memory cap, and relieved by the batch fix."""
import pytest

from repro import runner
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_runtime")]


@pytest.mark.slow
def test_an_oom_is_reproduced_under_a_cap_and_the_smaller_batch_runs_under_it(alpha):
    incident = diagnosed_incident(alpha, log=(DEMO / "cuda-oom.log").read_text(),
                                  command=(DEMO / "cuda-oom.command.txt").read_text())
    assert incident.diagnosis.category == "gpu_oom"
    runner.reproduce(incident.pk)
    runs = list(incident.repro_runs.order_by("id"))
    summary = [(r.kind, r.status, r.fix_kind, r.reason, r.details, r.log_tail[-500:]) for r in runs]
    assert [(r.kind, r.status, r.fix_kind) for r in runs] == [
        ("memory", "reproduced", ""), ("memory", "passed", "reduce_batch_size")], summary
    reproduction, check = runs
    details = reproduction.details
    assert details["peak_after_mb"] < details["peak_before_mb"]  # measured, both on the tiny model
    assert details["virtual_after_mb"] < details["cap_mb"] < details["virtual_before_mb"]
    assert reproduction.limit_hit == "memory" and reproduction.limits["address_space_mb"] == details["cap_mb"]
    assert "--per_device_train_batch_size 8" in reproduction.command
    assert "--per_device_train_batch_size 4" in check.command and check.exit_status == 0
    assert "relative" in check.verdict["summary"]
    incident.diagnosis.refresh_from_db()
    verified = {f["kind"]: f["verified"] for f in incident.diagnosis.data["fixes"]}
    assert verified["reduce_batch_size"] is True and verified["shard_more"] is None
