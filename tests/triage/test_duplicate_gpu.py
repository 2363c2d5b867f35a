"""Two ranks on one GPU: who placed them decides the first fix. The line naming the duplicate is a later line of
the exception's message, and is read with that exception's frames."""

from __future__ import annotations

import pytest

from tests.triage.triage_helpers import diagnose_text


def _traceback(frames: list[str], rank: int = 1) -> str:
    body = "".join(f'[rank{rank}]:   File "{path}", line {n + 10}, in step\n[rank{rank}]:     x()\n'
                   for n, path in enumerate(frames))
    return (f"[rank{rank}]: Traceback (most recent call last):\n{body}"
            f"[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: ../NCCLUtils.hpp:317, invalid usage "
            "(run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n"
            f"[rank{rank}]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            f"[rank{rank}]: Last error:\n"
            f"[rank{rank}]: Duplicate GPU detected : rank {rank} and rank 0 both on CUDA device 3b000\n")


TORCH = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


@pytest.mark.parametrize("frames, first", [
    # the team's own DDP script builds its device: it never set the local rank's device
    (["/home/mei/seg/train_ddp.py", "/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", TORCH],
     "fix_code"),
    # accelerate placed the processes: more processes than the GPUs the launch sees
    (["/work/t2i/train.py", "/venv/lib/python3.11/site-packages/accelerate/state.py", TORCH], "fix_config"),
])
def test_who_placed_the_ranks_decides_the_first_fix(tmp_path, frames, first):
    result = diagnose_text(tmp_path, _traceback(frames))
    assert result.category == "nccl_error"
    assert "Duplicate GPU" in result.root_cause.message
    assert result.fixes[0]["kind"] == first


def test_a_bare_warning_line_asks_first_for_one_process_per_gpu(tmp_path):
    text = "box:311:311 [0] init.cc:1011 NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 1b000\n"
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 8 train.py")
    assert result.category == "nccl_error"
    kinds = [fix["kind"] for fix in result.fixes]
    assert kinds[0] == "fix_config" and "pin_versions" in kinds
