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
