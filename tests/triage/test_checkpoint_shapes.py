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
