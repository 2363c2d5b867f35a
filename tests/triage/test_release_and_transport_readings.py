"""Messages whose plain reading names the wrong part: a 4.x recipe on transformers 5, the Trainer's own rename
race, NCCL's shared memory running out."""

from __future__ import annotations

import shlex

import pytest

from triage import diagnose


def _run(tmp_path, text, command=None):
    (tmp_path / "job.log").write_text(text)
    return diagnose([tmp_path / "job.log"], command=command)


@pytest.mark.parametrize("keys, category", [
    ("['logging_dir', 'overwrite_output_dir']", "version_mismatch"),
    # current keys among them: the config was given to another command or stage
    ("['output_dir', 'overwrite_output_dir', 'learning_rate']", "config_invalid"),
])
def test_unused_keys_that_transformers_5_removed(tmp_path, keys, category):
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/bc/train_bc.py", line 40, in main\n'
            "    args, = parser.parse_yaml_file(cfg)\n"
            f"ValueError: Some keys are not used by the HfArgumentParser: {keys}\n")
    result = _run(tmp_path, text, command="accelerate launch train_bc.py --overwrite_output_dir True --logging_dir logs")
    assert result.category == category
    if category == "version_mismatch":
        first = result.fixes[0]
        assert first["kind"] == "rename_flag"
        argv = shlex.split(first["command"])
        assert "--overwrite_output_dir" not in argv and "--logging_dir" not in argv


@pytest.mark.parametrize("source, category", [
    ("/runs/sft/tmp-checkpoint-100", "version_mismatch"),  # the Trainer's own rename
    ("/runs/sft/state.tmp", "code_bug"),  # the script's own temporary file, renamed by every rank
])
def test_a_rename_whose_source_is_gone(tmp_path, source, category):
    target = source.replace("tmp-checkpoint", "checkpoint").replace(".tmp", ".pt")
    text = ("[rank3]: Traceback (most recent call last):\n"
            '[rank3]:   File "/srv/sft/train.py", line 88, in main\n'
            "[rank3]:     trainer.train()\n"
            f"[rank3]: FileNotFoundError: [Errno 2] No such file or directory: '{source}' -> '{target}'\n")
    result = _run(tmp_path, text)
    assert result.category == category


def test_nccls_shared_memory_segment_out_of_space_is_the_transport_not_a_disk(tmp_path):
    text = ("node7:5122:5580 [2] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n"
            "node7:5122:5580 [2] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "nccl-shm-recv-a71c (size 9637888)\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/ds/train.py", line 20, in <module>\n'
            "    engine, *_ = deepspeed.initialize(model=model)\n"
            "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, "
            "NCCL version 2.7.8\n")
    result = _run(tmp_path, text)
    assert result.category == "nccl_error"
    assert result.fixes[0]["kind"] == "increase_shm"
    # a disk that is full is still the disk
    disk = _run(tmp_path, "OSError: [Errno 28] No space left on device: '/ckpt/step-400/model.safetensors'\n")
    assert disk.category == "storage"


@pytest.mark.parametrize("code, category", [
    # a library's line calling another package's function that refuses the arguments: the releases disagree
    ('torch.distributed.init_process_group(backend="nccl", **kwargs)', "version_mismatch"),
])
def test_a_library_calling_another_package_with_arguments_it_refuses(tmp_path, code, category):
    site = "/opt/env/lib/python3.10/site-packages"
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/chat/train.py", line 12, in main\n'
            "    accelerator = Accelerator(kwargs_handlers=[pg_kwargs])\n"
            f'  File "{site}/accelerate/state.py", line 127, in __init__\n'
            f"    {code}\n"
            "TypeError: init_process_group() got multiple values for keyword argument 'backend'\n")
    assert _run(tmp_path, text).category == category


def test_devices_mixed_inside_deepspeeds_own_optimizer_step_are_its_release(tmp_path):
    site = "/opt/env/lib/python3.11/site-packages"
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/srv/sft/train.py", line 90, in <module>',
        "[rank2]:     trainer.train()",
        f'[rank2]:   File "{site}/deepspeed/runtime/zero/stage3.py", line 2117, in unscale_and_clip_grads',
        "[rank2]:     self.fp32_partitioned_groups_flat[i].grad.mul_(1. / combined_scale)",
        "[rank2]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:2 and cpu!",
    ]) + "\n")
    result = diagnose([log])
    assert result.category == "version_mismatch"
    assert result.fixes[0]["kind"] == "pin_versions"


def test_a_librarys_own_call_into_torch_refused_with_its_tensors_is_a_release_pairing(tmp_path):
    # no rule names the message; the script is only at the top, a framework built the DDP wrapper and torch
    # refused the tensors it handed over: the framework and the installed torch disagree
    site = "/opt/venv/lib/python3.8/site-packages"
    text = ("Traceback (most recent call last):\n"
            '  File "/home/mx/vit/train.py", line 88, in main\n'
            "    engine, *_ = framework.initialize(model, optimizer, criterion)\n"
            f'  File "{site}/parakit/initialize.py", line 301, in initialize\n'
            "    model = DDP(model, process_group=gpc.get_group(ParallelMode.DATA))\n"
            f'  File "{site}/torch/nn/parallel/distributed.py", line 446, in __init__\n'
            "    self._ddp_init_helper()\n"
            f'  File "{site}/torch/nn/parallel/comm.py", line 58, in broadcast_coalesced\n'
            "    return torch._C._broadcast_coalesced(tensors, devices, buffer_size)\n"
            "RuntimeError: Tensors must be placed on the first replica device: 0\n")
    result = _run(tmp_path, text)
    assert result.category == "version_mismatch"
    assert result.fixes[0]["kind"] == "pin_versions"


def test_peers_timing_out_on_the_id_rank_0_never_posted_is_a_collective_timeout(tmp_path):
    # ranks 1-3 reach the first collective and wait in the store for rank 0's NCCL id while rank 0 is still
    # mapping the dataset on the main process; the map's progress bar is not the failure
    text = "Map (num_proc=16):  12%|#2        | 112000/930514 [09:41<1:10:49, 192.58 examples/s]\n"
    for rank in (3, 1, 2):
        text += (f"[rank{rank}]: RuntimeError: [{rank}] is setting up NCCL communicator and retrieving ncclUniqueId "
                 "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n")
    result = _run(tmp_path, text, command="torchrun --nproc_per_node 4 fine_tune.py")
    assert result.category == "nccl_timeout"
    assert result.root_cause.exception == "RuntimeError"
    assert result.fixes[0]["kind"] == "increase_timeout"
