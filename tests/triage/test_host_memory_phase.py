"""Which part of a job filled the host's memory decides the first fix: a DDP forward is a training step (the
batch), where loading a checkpoint is the model's (loading with less host RAM)."""

from __future__ import annotations

import pytest

from tests.triage.triage_helpers import diagnose_text
from triage.progress import phase_of_frames

SITE = "/opt/venv/lib/python3.11/site-packages"


@pytest.mark.parametrize("functions, phase", [
    (["main", "train", "_wrapped_call_impl", "_run_ddp_forward", "forward", "_conv_forward"], "training"),
    (["main", "from_pretrained", "_load_state_dict_into_meta_model"], "loading"),
    (["main", "evaluate", "forward"], None),
])
def test_phase_of_frames(functions, phase):
    assert phase_of_frames([{"function": name} for name in functions]) == phase


def test_host_memory_refused_in_a_ddp_forward_asks_for_a_smaller_batch_first(tmp_path):
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/ssl/pretrain.py", line 140, in train\n'
            "    loss = model(view_a, view_b)\n"
            f'  File "{SITE}/torch/nn/parallel/distributed.py", line 1450, in _run_ddp_forward\n'
            "    return self.module(*inputs, **kwargs)\n"
            f'  File "{SITE}/torch/nn/modules/conv.py", line 560, in _conv_forward\n'
            "    return F.conv2d(\n"
            "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
            "memory: you tried to allocate 67108864 bytes. Error code 12 (Cannot allocate memory)\n")
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 2 pretrain.py --batch-size 1024")
    assert result.category == "host_oom"
    assert result.fixes[0]["kind"] == "reduce_batch_size"
