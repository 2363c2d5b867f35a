"""A tensor op at the script's own line that refuses its arguments with a message no rule knows is still
the script's (or, in the data code, the rows'): never 'unknown' when the log holds the whole story."""

from __future__ import annotations

import pytest

from triage import diagnose

SITE = "/opt/env/lib/python3.11/site-packages"


def _run(tmp_path, frames, last):
    lines = ["Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'  File "{path}", line 51, in {function}', f"    {code}"]
    (tmp_path / "run.log").write_text("\n".join(f"[rank2]: {line}" for line in [*lines, last]) + "\n")
    return diagnose([tmp_path / "run.log"])


MODEL = [("/srv/molnet/train.py", "main", "out = model(graph)"),
         ("/srv/molnet/layers.py", "forward", "msg = h.index_select(0, edges[0])")]
DATA = [("/srv/molnet/train.py", "main", "for batch in loader:"),
        (f"{SITE}/torch/utils/data/dataloader.py", "__next__", "data = self._next_data()"),
        (f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch", "data = [self.dataset[idx] for idx in possibly_batched_index]"),
        ("/srv/molnet/data.py", "__getitem__", "x = feats.index_select(0, order)")]


@pytest.mark.parametrize("frames, message, category", [
    (MODEL, "RuntimeError: index 1534 is out of bounds for dimension 0 with size 1500", "code_bug"),
    (MODEL, "RuntimeError: scatter(): Expected dtype int64 for index", "code_bug"),
    (DATA, "RuntimeError: index 77 is out of bounds for dimension 0 with size 40", "data_pipeline"),
])
def test_a_refused_tensor_op_is_the_lines_or_the_rows(tmp_path, frames, message, category):
    result = _run(tmp_path, frames, message)
    assert result.category == category
    assert result.root_cause.exception == "RuntimeError"
    assert result.fixes and result.fixes[0]["kind"] in ("fix_code", "fix_data_file")


@pytest.mark.parametrize("frames, message", [
    # a wrapper the script's loop re-raises for a worker process that died: not a tensor op
    ([("/srv/lm/train.py", "train", "batch = next(loader)")],
     "RuntimeError: Async reader 7731 exited with code 1"),
    # a collective the script calls: its failure is the peers', not the line's
    ([("/srv/lm/train.py", "train", "dist.all_reduce(loss_sum)")],
     "RuntimeError: a tensor of an unknown kind reached the collective"),
])
def test_not_a_tensor_op_of_the_script(tmp_path, frames, message):
    assert _run(tmp_path, frames, message).category != "code_bug"


def test_bias_dtype_and_cuda_nll_kernel_name_their_causes(tmp_path):
    bias = _run(tmp_path, MODEL, "RuntimeError: Input type (double) and bias type (float) should be the same")
    assert (bias.category, bias.rule_id) == ("code_bug", "code.dtype_mismatch")
    targets = _run(tmp_path, MODEL,
                   "RuntimeError: \"nll_loss_forward_reduce_cuda_kernel_2d_index\" not implemented for 'Float'")
    assert (targets.category, targets.rule_id) == ("data_schema", "data.float_class_targets")


@pytest.mark.parametrize("code, category", [
    # a reward function parsing a model's answer: the parsing code's assumption
    ("pred = int(match.group(1).strip())", "code_bug"),
    # a setting read from the environment or the config: the setting's value
    ("steps = int(os.environ.get('MAX_STEPS', '10'))", "config_invalid"),
    ("warmup = int(cfg.train.warmup * total)", "config_invalid"),
])
def test_text_that_is_not_a_number_at_the_scripts_line(tmp_path, code, category):
    frames = [(f"{SITE}/trl/trainer/grpo_trainer.py", "_calculate_rewards", "out = reward_func(prompts)"),
              ("/srv/rl/rewards.py", "exact_answer", code)]
    result = _run(tmp_path, frames, "ValueError: invalid literal for int() with base 10: '\\\\frac{7'")
    assert result.category == category


@pytest.mark.parametrize("code, category", [
    ("scores = (h * self.item_emb(items)).sum(-1)", "code_bug"),
    ("e = self.time_mlp(t) + self.class_embedding(y)", "code_bug"),
    ("x = self.tok_emb(ids) + self.pos(t)", "model_load"),  # a token table: the tokenizer and the model differ
])
def test_an_id_past_an_embedding_table_by_what_the_table_holds(tmp_path, code, category):
    frames = [("/srv/rec/train.py", "step", "out = model(batch)"), ("/srv/rec/model.py", "forward", code),
              (f"{SITE}/torch/nn/modules/sparse.py", "forward", "return F.embedding(")]
    assert _run(tmp_path, frames, "IndexError: index out of range in self").category == category


@pytest.mark.parametrize("code, category", [
    ('src, tgt = line.rstrip("\\n").split("\\t")', "data_schema"),
    ("a, b = pair_of(items)", "code_bug"),
])
def test_a_row_split_into_another_number_of_fields(tmp_path, code, category):
    frames = [("/srv/mt/train.py", "main", "pairs = read_pairs(path)"), ("/srv/mt/pairs.py", "read_pairs", code)]
    result = _run(tmp_path, frames, "ValueError: too many values to unpack (expected 2)")
    assert result.category == category


@pytest.mark.parametrize("function, category", [
    ("read_episodes", "data_schema"),  # a reader of the team's own record files
    ("read_configs", "code_bug"),  # a reader of settings is not the data
])
def test_a_missing_field_in_a_reader_named_for_its_records(tmp_path, function, category):
    frames = [("/srv/rl/bc.py", "main", "eps = loader(path)"), ("/srv/rl/bc.py", function, 'if ep["ret"] >= floor:')]
    assert _run(tmp_path, frames, "KeyError: 'ret'").category == category
