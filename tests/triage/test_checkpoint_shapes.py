"""Embedding rows that do not fit: tokens added in training, or a checkpoint saved with another
tensor-parallel size (each rank holds a whole fraction of the vocabulary)."""

from __future__ import annotations

import pytest

from triage import diagnose

LOAD = """\
Traceback (most recent call last):
  File "/work/sft/restore.py", line 40, in <module>
    model.load_state_dict(state)
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 2593, in load_state_dict
    raise RuntimeError(
RuntimeError: Error(s) in loading state_dict for GPTModel:
\tsize mismatch for model.embedding.word_embeddings.weight: copying a param with shape torch.Size([{saved}, 2048]) \
from checkpoint, the shape in current model is torch.Size([{current}, 2048]).
"""


@pytest.mark.parametrize("saved, current, first", [
    (50304, 25152, "fix_config"),  # saved at TP=1, loaded at TP=2: half the rows on each rank
    (12576, 50304, "fix_config"),  # saved at TP=4, loaded at TP=1
    (32002, 32000, "fix_code"),    # two tokens added when it was trained: resize the embeddings
])
def test_rows_a_whole_multiple_apart_are_a_parallel_size_not_added_tokens(tmp_path, saved, current, first):
    log = tmp_path / "restore.log"
    log.write_text(LOAD.format(saved=saved, current=current))
    result = diagnose([log])
    kinds = [fix["kind"] for fix in result.fixes]
    assert (result.category, kinds[0]) == ("model_load", first)
    assert "fix_config" in kinds  # added tokens may be a setting too (a framework's resize flag)


def _ranked(rank: int, text: str) -> str:
    return "".join(f"[rank{rank}]: {line}\n" for line in text.splitlines())


WIDER = LOAD.replace("{saved}, 2048", "{saved}, 96").replace("{current}, 2048", "{current}, 64").replace(
    "model.embedding.word_embeddings.weight", "encoder.proj.weight")


def test_a_checkpoint_of_another_shape_on_some_ranks_only_is_their_copy_of_the_file(tmp_path):
    # ranks 2 and 3 (the second node) find another model's checkpoint; ranks 0 and 1 load theirs and wait
    log = tmp_path / "job.log"
    own = _ranked(2, WIDER.format(saved=512, current=512)) + _ranked(3, WIDER.format(saved=512, current=512))
    peers = "".join(f"[rank{rank}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read "
                    "error [10.4.0.12]:40611: Connection reset by peer\n" for rank in (0, 1))
    log.write_text(peers + own)
    result = diagnose([log], command="torchrun --nnodes 2 --nproc_per_node 2 fit.py --resume ckpt/last.pt")
    assert (result.category, result.rule_id) == ("model_load", "model_load.state_dict")
    assert result.failing_rank == 2
    assert result.fixes[0]["kind"] == "fix_path"


def test_a_checkpoint_of_another_shape_on_every_rank_keeps_the_settings_first(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("".join(_ranked(rank, WIDER.format(saved=512, current=512)) for rank in range(4)))
    result = diagnose([log], command="torchrun --nnodes 2 --nproc_per_node 2 fit.py --resume ckpt/last.pt")
    assert (result.category, result.rule_id) == ("model_load", "model_load.state_dict")
    assert result.fixes[0]["kind"] != "fix_path"
