"""GPU memory that runs out where a rollout engine (vLLM) shares a GPU with a training rank: the engine's
placement or its memory share is the change, in a command that still launches and still divides."""

from __future__ import annotations

import shlex

from triage import diagnose

OOM = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/work/rl/grpo.py", line 88, in <module>
[rank0]:     trainer = GRPOTrainer(model=policy, args=cfg)
[rank0]:   File "/venv/lib/python3.11/site-packages/vllm/worker/worker.py", line 240, in determine_num_available_blocks
[rank0]:     self.model_runner.profile_run()
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB. GPU 3 has a total capacity of \
79.15 GiB of which 900.00 MiB is free. Process 7101 has 41.20 GiB memory in use. Process 7188 has 36.90 GiB memory \
in use.
"""


def _fixes(tmp_path, command):
    (tmp_path / "job.log").write_text(OOM)
    result = diagnose([tmp_path / "job.log"], command=command)
    assert result.category == "gpu_oom"
    return result.fixes


def test_engine_on_the_last_training_gpu_trains_on_one_process_fewer(tmp_path):
    command = ("accelerate launch --num_processes 4 grpo.py --use_vllm True --vllm_device cuda:3 "
               "--num_generations 8 --per_device_train_batch_size 4")
    first = _fixes(tmp_path, command)[0]
    assert first["kind"] == "fix_config"
    argv = shlex.split(first["command"])
    assert argv[argv.index("--num_processes") + 1] == "3"
    # 3 x 4 completions must split into whole groups of generations
    generations = int(argv[argv.index("--num_generations") + 1])
    assert (3 * 4) % generations == 0 and generations <= 8


def test_engine_sharing_by_design_takes_a_smaller_share(tmp_path):
    command = "torchrun --nproc_per_node 4 grpo.py --use_vllm --vllm_gpu_memory_utilization 0.9"
    first = _fixes(tmp_path, command)[0]
    assert first["kind"] == "fix_config"
    argv = shlex.split(first["command"])
    assert argv[argv.index("--vllm_gpu_memory_utilization") + 1] == "0.5"


def test_without_an_engine_another_process_is_not_read_as_one(tmp_path):
    plain = OOM.replace("/venv/lib/python3.11/site-packages/vllm/worker/worker.py", "/work/rl/model.py")
    (tmp_path / "job.log").write_text(plain)
    result = diagnose([tmp_path / "job.log"], command="torchrun --nproc_per_node 4 sft.py --per_device_train_batch_size 4")
    assert result.fixes[0]["kind"] != "fix_config"
