"""The command line contract: JSON on stdout, exit 0 for any diagnosis, exit 2 + one line for unusable input."""

from __future__ import annotations

import json

from triage_helpers import FIXTURES, run_cli, write

CONTRACT_KEYS = {
    "engine_version",
    "category",
    "confidence",
    "summary",
    "launcher",
    "world_size",
    "failing_rank",
    "root_cause",
    "ranks",
    "fixes",
    "memory",
    "fingerprint",
}


def test_it_prints_exactly_one_json_object_with_the_contract_keys():
    proc = run_cli(
        "diagnose",
        "--json",
        str(FIXTURES / "rules" / "data_match.log"),
        "--command",
        "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 4",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert CONTRACT_KEYS <= set(data)
    assert data["engine_version"] == "1.0.0"
    assert data["category"] == "data_schema" and data["failing_rank"] == 1 and data["world_size"] == 2
    assert data["root_cause"]["exception"] == "KeyError"
    assert data["root_cause"]["evidence"][0]["line"] == 4
    assert data["memory"].keys() >= {"series", "estimate"}
    assert all(fix["kind"] for fix in data["fixes"])


def test_it_exits_zero_for_an_unknown_failure(tmp_path):
    log = write(tmp_path / "quiet.log", "step 1 done\nstep 2 done\n")
    proc = run_cli("diagnose", "--json", str(log))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["category"] == "unknown"


def test_it_prints_a_human_report_by_default():
    proc = run_cli("diagnose", str(FIXTURES / "rules" / "memory_match.log"))
    assert proc.returncode == 0
    assert "Verdict: gpu_oom" in proc.stdout
    assert "First failing rank" in proc.stdout
    assert "memory_match.log:6" in proc.stdout
    assert "Fixes:" in proc.stdout


def test_it_exits_two_with_one_line_for_a_missing_file(tmp_path):
    proc = run_cli("diagnose", "--json", str(tmp_path / "nope.log"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1


def test_it_exits_two_for_an_unreadable_archive(tmp_path):
    broken = write(tmp_path / "logs.tar.gz", b"\x1f\x8b\x08\x00garbage that is not gzip at all")
    proc = run_cli("diagnose", str(broken))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1


def test_it_reads_command_config_and_data_files(tmp_path):
    command = write(tmp_path / "command.txt", "torchrun --nproc_per_node=4 train.py --bf16 True\n")
    config = write(tmp_path / "ds.json", json.dumps({"train_batch_size": 64}))
    data = write(tmp_path / "data.jsonl", '{"instruction": "hi", "output": "yo"}\n')
    data_arg = str(data)
    proc = run_cli(
        "diagnose",
        "--json",
        "--command-file",
        str(command),
        "--config",
        str(config),
        "--data",
        data_arg,
        str(FIXTURES / "rules" / "data_match.log"),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["world_size"] == 4


def test_it_rejects_bad_usage_with_exit_two():
    proc = run_cli("diagnose", "--json")
    assert proc.returncode == 2
