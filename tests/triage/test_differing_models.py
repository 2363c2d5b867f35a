"""DDP finding ranks whose models differ in shape: a file that differs by node, or each rank sizing the model
by something of its own."""

from __future__ import annotations

from triage import diagnose


def _mismatch(rank: int) -> str:
    return (f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/srv/tts/train.py", line 120, in main\n'
            f"[rank{rank}]:     model = DDP(model)\n"
            f"[rank{rank}]: RuntimeError: [{rank}]: params[1] in this process with sizes [3, 64] appears not to match "
            "sizes of the same param in process 0.\n")


def test_one_rank_of_a_node_alone_built_another_model_its_code_sized_it(tmp_path):
    (tmp_path / "node1.log").write_text(_mismatch(3))
    command = "torchrun --nnodes 2 --nproc_per_node 2 --node_rank 1 --master_addr 10.0.0.1 train.py"
    result = diagnose([tmp_path / "node1.log"], command=command)
    assert result.category == "code_bug"


def test_every_rank_of_the_other_node_built_another_model_its_files_differ(tmp_path):
    (tmp_path / "node1.log").write_text(_mismatch(2) + _mismatch(3))
    command = "torchrun --nnodes 2 --nproc_per_node 2 --node_rank 1 --master_addr 10.0.0.1 train.py"
    result = diagnose([tmp_path / "node1.log"], command=command)
    assert result.category == "config_invalid"


def test_a_setting_of_0_in_the_config_that_the_raising_line_names(tmp_path):
    import json

    (tmp_path / "run.log").write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/mt/train.py", line 61, in lr_at\n'
        "    return d ** -0.5 * min(s ** -0.5, s * warmup ** -1.5)\n"
        "ZeroDivisionError: 0.0 cannot be raised to a negative power\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"optim": {"lr": 1.0, "warmup_steps": 0}, "num_workers": 0}))
    result = diagnose([tmp_path / "run.log"], config_paths=[config])
    assert result.category == "config_invalid"
    assert result.fixes[0]["title"] == "Give warmup_steps a positive value"
    # the same division with warm-up set: the script's own arithmetic
    config.write_text(json.dumps({"optim": {"lr": 1.0, "warmup_steps": 400}, "num_workers": 0}))
    assert diagnose([tmp_path / "run.log"], config_paths=[config]).category == "code_bug"
