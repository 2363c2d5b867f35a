"""A watchdog timeout on one of the job's first collectives: moving bulk data (the model's weights broadcast) it
is the transport between the GPUs, so NCCL's settings come first; a barrier's single element is a rank that was
still busy (tokenizing on the main process), so a longer timeout does."""

from __future__ import annotations

import pytest

from tests.triage.triage_helpers import diagnose_text


def _watchdog(op: str, numel: int) -> str:
    return "".join(
        f"[rank{rank}]:[E1201 10:30:00.000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum=1, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
        "Timeout(ms)=1800000) ran for 1800083 milliseconds before timing out.\n"
        for rank in (1, 2, 3))


@pytest.mark.parametrize("op, numel, first", [
    ("BROADCAST", 131334144, "set_nccl_env"),
    ("ALLREDUCE", 1, "increase_timeout"),
])
def test_the_first_collectives_size_decides_the_first_fix(tmp_path, op, numel, first):
    result = diagnose_text(tmp_path, _watchdog(op, numel), command="torchrun --nproc_per_node 4 train.py")
    assert result.category == "nccl_timeout"
    assert result.fixes[0]["kind"] == first
