"""An OOM reproduced on the tiny model under a memory cap, and relieved by the batch fix."""
import pytest

from repro import runner, sandbox
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_runtime")]


@pytest.mark.slow
def test_an_oom_is_reproduced_under_a_cap_and_the_smaller_batch_runs_under_it(alpha):
    incident = diagnosed_incident(alpha, log=(DEMO / "cuda-oom.log").read_text(),
                                  command=(DEMO / "cuda-oom.command.txt").read_text())
    assert incident.diagnosis.category == "gpu_oom"
    runner.reproduce(incident.pk)
    runs = list(incident.repro_runs.order_by("id"))
    summary = [(r.kind, r.status, r.fix_kind, r.reason, r.details, r.log_tail[-3000:]) for r in runs]
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


def _capped(**outcome) -> sandbox.SandboxResult:
    return sandbox.SandboxResult(**{"exit_status": 1, "signal": None, "timed_out": False, "duration_s": 1.0,
                                    "peak_rss_mb": 1.0, "peak_process_mb": 1.0, "log": "", **outcome})


def test_a_capped_failure_counts_for_memory_unless_another_limit_stopped_the_run():
    # the identical command ran to the end without the cap, so any other way of dying under it is the cap's doing
    assert runner._failed_for_memory(_capped(limit_hit="memory"))
    assert runner._failed_for_memory(_capped(exit_status=None, signal=11))  # C code that did not check malloc
    assert runner._failed_for_memory(_capped(limit_hit=None))
    assert not runner._failed_for_memory(_capped(exit_status=0))
    assert not runner._failed_for_memory(_capped(timed_out=True, limit_hit="wall_clock"))
    assert not runner._failed_for_memory(_capped(limit_hit="file_size"))
    assert runner._failure_form(_capped(exit_status=None, signal=11), {"category": "unknown"}) == "unknown (signal 11)"
