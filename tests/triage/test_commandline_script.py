"""One command model: a pasted script is split into its commands, every node changes the same way,
each variable is set once where it applies, and the checker catches what the old rewrites got wrong."""
import bashlex
import pytest

from triage.commandline import (
    Rewrite,
    check,
    job_world,
    launch_shape,
    parse_command,
    parse_script,
    unified_diff,
)
from triage.commandline.check import env_set_twice, foreign_diff_lines

TWO_NODES = """#!/bin/bash
export NCCL_DEBUG=WARN
# node 0
torchrun --nnodes 2 --node_rank 0 --nproc_per_node 4 --master_addr 10.0.0.7 train.py \\
    --per_device_train_batch_size 8 --ddp_timeout 10
# node 1
torchrun --nnodes 2 --node_rank 1 --nproc_per_node 4 --master_addr 10.0.0.7 train.py \\
    --per_device_train_batch_size 8 --ddp_timeout 3600"""


def test_it_splits_a_script_into_node_commands_with_their_labels_and_exports():
    script = parse_script(TWO_NODES)
    assert [c.node for c in script.launches] == ["node 0", "node 1"]
    assert [c.value("node_rank", where="launcher") for c in script.launches] == ["0", "1"]
    assert list(script.exports) == ["NCCL_DEBUG"]
    assert launch_shape(script.primary).world == 8


def test_a_rewrite_changes_every_node_and_keeps_the_layout():
    rw = Rewrite(parse_command(TWO_NODES))
    rw.set_flag(("ddp_timeout",), 7200)
    rw.set_flag(("gradient_checkpointing",), True)
    rw.set_env("NCCL_DEBUG", "INFO")
    rw.set_env("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
    new = rw.render()
    after = parse_script(new)
    assert [c.value("ddp_timeout") for c in after.launches] == ["7200", "7200"]
    assert [c.value("gradient_checkpointing") for c in after.launches] == ["True", "True"]
    assert "export NCCL_DEBUG=INFO\n" in new and new.count("NCCL_DEBUG=") == 1  # changed where it was set
    # the new variable sits right before each command, after the node comment, never before it
    assert "# node 1\nTORCH_NCCL_DUMP_ON_TIMEOUT=1 torchrun" in new and "# node 0\nTORCH_NCCL" in new
    assert env_set_twice(after) == []
    assert {c["flag"] if "flag" in c else c["env"]: c.get("nodes") for c in rw.changes} == {
        "--ddp_timeout": 2, "--gradient_checkpointing": 2, "NCCL_DEBUG": 2, "TORCH_NCCL_DUMP_ON_TIMEOUT": 2}
    bashlex.parse(new)
    assert check(TWO_NODES, new, rw.changes, rw.diff()) == []


@pytest.mark.parametrize("text, launcher, script, env", [
    ("docker run --rm -it --gpus all -e HF_HOME=/cache -v /d:/d --shm-size 8g nvcr.io/pt:24.01 "
     "torchrun --nproc_per_node 8 train.py --bf16 True", "torchrun", "train.py", {"HF_HOME": "/cache"}),
    ("env CUDA_VISIBLE_DEVICES=0,1 WANDB_MODE=offline deepspeed --num_gpus 2 train.py --deepspeed ds.json",
     "deepspeed", "train.py", {"CUDA_VISIBLE_DEVICES": "0,1", "WANDB_MODE": "offline"}),
    ("srun -N 2 --ntasks-per-node 1 accelerate launch --num_processes 16 --num_machines 2 sft.py --lr 2e-5",
     "accelerate", "sft.py", {}),
    ("cd /work && source venv/bin/activate && OMP_NUM_THREADS=4 python -m torch.distributed.run "
     "--nproc_per_node 2 train.py --seed 1; echo done", "torchrun", "train.py", {"OMP_NUM_THREADS": "4"}),
    # limits and scheduling the job runs under, with their own arguments before the command
    ("MASTER_PORT=30465 prlimit --as=2147483648 timeout 60 python pretrain.py --config c.yaml 2>&1 | tee x.log",
     "python", "pretrain.py", {"MASTER_PORT": "30465"}),
    ("timeout -s INT 2h nice -n 5 taskset -c 0-7 torchrun --nproc_per_node 4 train.py", "torchrun", "train.py", {}),
    ("taskset 0xff accelerate launch --num_processes 2 sft.py", "accelerate", "sft.py", {}),
])
def test_it_finds_the_launch_command_behind_wrappers_and_other_commands(text, launcher, script, env):
    cmd = parse_command(text)
    assert (cmd.launcher, cmd.script, cmd.env) == (launcher, script, env)


def test_env_goes_into_the_container_not_the_host_and_is_never_set_twice():
    text = "docker run --rm -e NCCL_DEBUG=WARN img torchrun --nproc_per_node 2 train.py --x 1"
    rw = Rewrite(parse_command(text))
    rw.set_env("NCCL_DEBUG", "INFO")
    rw.set_env("NCCL_P2P_DISABLE", "1")
    new = rw.render()
    assert new == "docker run -e NCCL_P2P_DISABLE=1 --rm -e NCCL_DEBUG=INFO img torchrun --nproc_per_node 2 train.py --x 1"
    assert check(text, new, rw.changes, rw.diff()) == []


def test_the_diff_of_a_command_without_a_final_newline_never_glues_lines():
    old = "torchrun train.py \\\n    --lazy_preprocess True"
    new = old.replace("True", "False") + " \\\n    --gradient_checkpointing True"
    diff = unified_diff(old, new)
    assert "True+" not in diff and "True-" not in diff
    assert foreign_diff_lines(diff, old, new) == []
    glued = "--- a\n+++ b\n@@ -1 +1 @@\n-    --lazy_preprocess True+torchrun x\n"
    assert foreign_diff_lines(glued, old, new)  # the checker catches the old bug


def test_the_checker_catches_unparsable_twice_set_and_unlisted_changes():
    old = "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 8 --lr 1e-5"
    twice = "NCCL_DEBUG=INFO NCCL_DEBUG=INFO " + old
    assert any("set twice" in p for p in check(old, twice, [{"where": "env", "env": "NCCL_DEBUG", "new": "INFO"}]))
    broken = old + ' --note "unterminated'
    assert any("parse" in p for p in check(old, broken, []))
    sneaky = old.replace("--lr 1e-5", "--lr 1e-4")
    problems = check(old, sneaky, [{"where": "script", "flag": "--per_device_train_batch_size", "new": "4"}])
    assert problems == ["the command: --lr changed but is not among the listed changes"]


def test_world_size_a_launcher_default_yields_to_the_ranks_in_the_logs():
    bare = parse_command("torchrun train.py --x 1")
    assert launch_shape(bare).stated is False and launch_shape(bare).world == 1
    assert job_world(bare, 4) == (4, "4 rank(s) seen in the logs (the command's 1 is only the launcher default)")
    stated = parse_command("torchrun --nproc_per_node 8 train.py")
    assert job_world(stated, 4)[0] == 8 and job_world(stated, 16)[0] == 16
    assert job_world(parse_command("deepspeed train.py"), None) == (None, "deepspeed uses every visible GPU (count unknown)")


def test_without_a_launch_command_a_rewrite_only_reports_its_changes():
    for text in ("export A=1\nexport B=2", "cd /x && echo hi", "--lr 1 \\\n --bs 2\n"):
        rw = Rewrite(parse_command(text))
        rw.set_env("NCCL_DEBUG", "INFO")
        assert "NCCL_DEBUG" not in rw.render()
        assert [c["env"] for c in rw.changes] == ["NCCL_DEBUG"]
    assert parse_command("export A=1\nexport B=2").launcher == "unknown"
