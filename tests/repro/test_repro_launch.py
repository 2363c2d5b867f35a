"""Launch repros: the user's command on a tiny model in the sandbox, then the fix's corrected command."""
import json
from pathlib import Path

import pytest

from repro import runner
from repro.models import ReproRun
from tests.repro.factories import DEMO, diagnosed_incident

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_runtime")]
HERE = Path(__file__).resolve().parent / "fixtures"
SHAREGPT = json.dumps([{"conversations": [{"from": "human", "value": f"say {i}"}, {"from": "gpt", "value": "ok"}]}
                       for i in range(8)]).encode()


def runs_of(incident):
    return list(incident.repro_runs.order_by("id"))


@pytest.mark.slow
def test_a_renamed_flag_is_reproduced_by_the_reference_script_and_the_rename_verified(alpha):
    incident = diagnosed_incident(alpha, log=(HERE / "renamed-flag.log").read_text(),
                                  command=(HERE / "renamed-flag.command.txt").read_text(), data=SHAREGPT)
    assert incident.diagnosis.category == "version_mismatch"
    runner.reproduce(incident.pk)
    runs = runs_of(incident)
    kinds = [(r.kind, r.status, r.fix_kind) for r in runs]
    assert kinds == [("data_check", "passed", ""), ("launch", "reproduced", ""), ("launch", "passed", "rename_flag")], \
        [(k, r.reason, r.log_tail[-1500:]) for k, r in zip(kinds, runs, strict=True)]
    reproduction, check = runs[1], runs[2]
    assert reproduction.verdict["category"] == "version_mismatch" and reproduction.verdict["exception"] == "ValueError"
    assert "--evaluation_strategy" in reproduction.log_tail
    assert "reference_train.py" in reproduction.command and "/work/tiny-model" in reproduction.command
    assert "--nproc_per_node 2" in reproduction.command  # 4 GPUs -> 2 CPU processes
    assert reproduction.details["family"] == "qwen2"
    assert "--eval_strategy steps" in check.command and check.exit_status == 0
    incident.diagnosis.refresh_from_db()
    fixes = incident.diagnosis.data["fixes"]
    assert {f["kind"]: f["verified"] for f in fixes} == {"pin_versions": None, "rename_flag": True}


UPLOADED_SCRIPT = '''\
import argparse, json, os
import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path")
parser.add_argument("--data_path")
parser.add_argument("--max_steps", type=int, default=2)
args = parser.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
rows = json.load(open(args.data_path))
for step, row in enumerate(rows[rank::dist.get_world_size()][: args.max_steps]):
    text = " ".join(turn["value"] for turn in row["conversations"])
    ids = torch.tensor([list(text.encode())[:32]])
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    print(f"rank {rank} step {step} loss {loss.item():.3f}", flush=True)
dist.destroy_process_group()
'''


@pytest.mark.slow
def test_a_keyerror_in_an_uploaded_script_is_reproduced_and_fixed_by_converting_the_data(alpha):
    incident = diagnosed_incident(
        alpha, log=(DEMO / "keyerror-2rank.log").read_text(),
        command="torchrun --nproc_per_node=2 train.py --model_name_or_path meta-llama/Llama-3.2-1B "
                "--data_path /data/train_alpaca.json --max_steps 2",
        data=(DEMO / "keyerror-2rank.data.json").read_bytes(), data_name="train_alpaca.json",
        script=UPLOADED_SCRIPT.encode())
    runner.reproduce(incident.pk)
    runs = runs_of(incident)
    assert [(r.kind, r.status, r.fix_kind) for r in runs] == [
        ("data_check", "reproduced", ""), ("data_check", "passed", "convert_data_format"),
        ("launch", "reproduced", ""), ("launch", "passed", "convert_data_format")], [r.log_tail[-2000:] for r in runs]
    runs = runs[2:]  # the uploaded script's own runs
    reproduction, check = runs
    assert "/work/in/train.py" in reproduction.command
    assert "KeyError: 'conversations'" in reproduction.log_tail and reproduction.verdict["category"] == "data_schema"
    assert "train_alpaca.sharegpt.json" in check.command and "rank 1 step 0 loss" in check.log_tail
    incident.diagnosis.refresh_from_db()
    assert incident.diagnosis.data["fixes"][0]["verified"] is True


def test_an_nccl_timeout_is_not_reproducible_here_and_never_verified(alpha):
    incident = diagnosed_incident(alpha, log=(DEMO / "nccl-timeout.log").read_text(),
                                  command=(DEMO / "nccl-timeout.command.txt").read_text())
    assert incident.diagnosis.category == "nccl_timeout"
    runner.reproduce(incident.pk)
    run = incident.repro_runs.get()
    assert run.kind == ReproRun.Kind.UNSUPPORTED and run.status == ReproRun.Status.NOT_REPRODUCED
    assert run.reproducible is False and run.reason.startswith("Not reproducible here:")
    incident.diagnosis.refresh_from_db()
    assert all(fix["verified"] is None for fix in incident.diagnosis.data["fixes"])
