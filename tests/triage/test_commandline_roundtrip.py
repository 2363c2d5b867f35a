"""Launch commands parse into launcher, script and flags, and unparse byte for byte."""
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.commandline import parse_command, tokenize, unparse, world_size

FIXTURES = Path(__file__).parent / "fixtures" / "commands"
ROOT = Path(__file__).resolve().parents[2]
# the launch commands of the repository's labelled cases (real CPU runs, variants, blind cases)
LABELLED = [ROOT / "tests" / "fixtures" / "cpu_runs", FIXTURES.parent / "variants", FIXTURES.parent / "blind"]
CASE_COMMANDS = sorted(path for cases in LABELLED for path in cases.glob("*/command.txt"))
COMMAND_FILES = sorted(FIXTURES.iterdir()) + CASE_COMMANDS


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def test_it_has_command_files_from_the_labelled_cases_and_the_fixtures():
    assert len(list(FIXTURES.iterdir())) >= 15
    assert len(CASE_COMMANDS) >= 10


@pytest.mark.parametrize("path", COMMAND_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_it_unparses_every_command_byte_for_byte(path):
    text = read(path)
    assert unparse(parse_command(text)) == text


@given(st.text(alphabet=st.sampled_from(list(" \t\n\\'\"#;&|<>=-_abcxyz019$.")), max_size=80))
@settings(max_examples=300, deadline=None)
def test_it_round_trips_any_text_without_raising(text):
    assert unparse(parse_command(text)) == text
    assert tokenize(text).render() == text


@pytest.mark.parametrize(
    "name, launcher, script, world",
    [
        ("torchrun_multinode.sh", "torchrun", "train.py", 16),
        ("python_m_torch_run.txt", "torchrun", "finetune.py", 4),
        ("deepspeed_include.sh", "deepspeed", "src/train.py", 4),
        ("deepspeed_hostfile.txt", "deepspeed", "train.py", 16),
        ("accelerate_kebab.txt", "accelerate", "train.py", 8),
        ("accelerate_axolotl.txt", "accelerate", "axolotl.cli.train", None),
        ("srun_torchrun.sh", "torchrun", "train.py", 16),
        ("sbatch_wrapper.txt", "sbatch", "scripts/train.slurm", None),
        ("env_prefix.txt", "python", "train.py", 1),
        ("llamafactory_cli.txt", "llamafactory-cli", None, None),
        ("pipeline.txt", "torchrun", "train.py", None),
        ("python_module.txt", "python", "trl.scripts.sft", 1),
        ("crlf_tabs.txt", "torchrun", "train.py", 2),
    ],
)
def test_it_finds_launcher_script_and_world_size(name, launcher, script, world):
    cmd = parse_command(read(FIXTURES / name))
    assert cmd.launcher == launcher
    assert cmd.script == script
    assert world_size(cmd)[0] == world


def test_it_reads_flag_values_in_every_style():
    cmd = parse_command(read(FIXTURES / "torchrun_multinode.sh"))
    assert cmd.value("rdzv_endpoint", where="launcher") == "10.0.0.1:29400"  # quotes removed
    assert cmd.value("per_device_train_batch_size") == "4"  # --flag=value
    assert cmd.flag("bf16").value is None  # bare switch
    assert cmd.value("output_dir") == "/checkpoints/run 7"  # quoted with a space
    kebab = parse_command(read(FIXTURES / "accelerate_kebab.txt"))
    assert kebab.value("per_device_train_batch_size") == "4"  # --per-device-train-batch-size=4
    assert kebab.value("model_name_or_path") == "mistralai/Mistral-7B-v0.1"


def test_it_reads_quotes_escapes_env_and_comments():
    cmd = parse_command(read(FIXTURES / "quoting.sh"))
    assert cmd.env == {"WANDB_PROJECT": "my proj"}
    assert cmd.value("run_name") == 'sft "v2" run'
    assert cmd.value("data") == "my data.json"
    assert cmd.value("fsdp") == "full_shard auto_wrap"
    assert cmd.value("report_to") == "none"  # the comment after it is not a token
    env = parse_command(read(FIXTURES / "env_prefix.txt"))
    assert env.env["CUDA_VISIBLE_DEVICES"] == "0,1" and env.wrappers == ["env"]
    assert env.value("warmup") == "-0.5"  # a negative number is a value, not a flag


def test_it_picks_the_launching_segment_of_a_pipeline():
    cmd = parse_command(read(FIXTURES / "pipeline.txt"))
    assert cmd.env == {"NCCL_DEBUG": "INFO"}
    assert [f.key for f in cmd.script_flags] == ["max_steps"]  # 2>&1 | tee ... is not a flag


def test_it_reads_a_fragment_that_starts_with_flags():
    cmd = parse_command("    --dataset_dir data \\\n    --dataset ultrachat_200k \\\n    --cutoff_len 204800 \\\n")
    assert cmd.value("cutoff_len") == "204800"
    assert cmd.value("dataset_dir") == "data"


def test_it_skips_wrapper_options_that_take_values():
    srun = parse_command("srun -p gpu -N 2 --gres=gpu:8 torchrun --nnodes 2 --nproc_per_node 8 train.py --x 1")
    assert (srun.launcher, srun.script, srun.wrappers) == ("torchrun", "train.py", ["srun"])
    mpirun = parse_command("mpirun -np 8 -x NCCL_DEBUG=INFO --allow-run-as-root python train.py --x 1")
    assert (mpirun.launcher, mpirun.script) == ("python", "train.py")
    assert world_size(mpirun)[0] == 8  # one python process per MPI task
