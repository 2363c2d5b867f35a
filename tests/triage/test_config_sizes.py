"""Tensor sizes that disagree inside the team's own model, in a job whose config sizes its layers: a size
setting is wrong (config_invalid, fix_config naming the settings); without such a config it stays a code bug."""

from __future__ import annotations

import json

import pytest

from triage import diagnose

SITE = "/opt/env/lib/python3.11/site-packages"


def _log(own: list[tuple[str, str, str]], error: str) -> str:
    lines = ["[rank1]: Traceback (most recent call last):"]
    for path, function, code in own:
        lines += [f'[rank1]:   File "{path}", line 57, in {function}', f"[rank1]:     {code}"]
    lines += [f'[rank1]:   File "{SITE}/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl',
              "[rank1]:     return self._call_impl(*args, **kwargs)",
              f'[rank1]:   File "{SITE}/torch/nn/modules/linear.py", line 134, in forward',
              "[rank1]:     return F.linear(input, self.weight, self.bias)",
              f"[rank1]: {error}"]
    return "\n".join(lines) + "\n"


OWN = [("/work/teams/orbit/fit_net.py", "main", "loss = step(net, batch)"),
       ("/work/teams/orbit/orbit/net.py", "forward", "h = self.proj(torch.cat([x, feats], dim=-1))")]
MATMUL = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x40 and 36x128)"
ELEMENTWISE = ("RuntimeError: The size of tensor a (960) must match the size of tensor b (1200) "
               "at non-singleton dimension 1")


@pytest.mark.parametrize("error", [MATMUL, ELEMENTWISE])
def test_a_size_mismatch_in_the_own_model_of_a_sized_config_is_the_config(tmp_path, error):
    log = tmp_path / "fit.log"
    log.write_text(_log(OWN, error))
    conf = tmp_path / "orbit.json"
    conf.write_text(json.dumps({"data": {"batch_size": 16, "frame_size": 32},
                                "net": {"feat_dim": 4, "hidden": 128, "layers": 2}, "train": {"max_steps": 9}}))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit_net.py --config orbit.json",
                      config_paths=[conf])
    assert result.category == "config_invalid"
    first = result.fixes[0]
    assert first["kind"] == "fix_config"
    # the model's own section first; the batch size is not a layer's size
    assert first["title"] == "Make feat_dim, hidden agree with the data"
    assert "batch_size" not in " ".join(first["notes"])
    assert [fix["kind"] for fix in result.fixes][:2] == ["fix_config", "fix_code"]


def test_without_a_config_that_sizes_layers_it_stays_a_code_bug(tmp_path):
    log = tmp_path / "fit.log"
    log.write_text(_log(OWN, MATMUL))
    conf = tmp_path / "orbit.json"
    conf.write_text(json.dumps({"train": {"batch_size": 16, "max_steps": 9, "lr": 0.001}}))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit_net.py --config orbit.json",
                      config_paths=[conf])
    assert result.category == "code_bug"
    assert result.fixes[0]["kind"] == "fix_code"


def test_a_mismatch_inside_a_library_model_is_not_read_as_the_config(tmp_path):
    library = [("/work/teams/orbit/fit_net.py", "main", "out = model(**batch)"),
               (f"{SITE}/transformers/models/bert/modeling_bert.py", "forward", "h = self.dense(hidden_states)")]
    log = tmp_path / "fit.log"
    log.write_text(_log(library, MATMUL))
    conf = tmp_path / "orbit.json"
    conf.write_text(json.dumps({"net": {"feat_dim": 4, "hidden": 128}}))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit_net.py --config orbit.json",
                      config_paths=[conf])
    assert result.category != "config_invalid"


STACK = ("RuntimeError: stack expects each tensor to be equal size, but got [64, 8] at entry 0 and [64, 24] "
         "at entry 1")


def _stack_log(frames: list[tuple[str, str, str]]) -> str:
    lines = ["[rank0]: Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'[rank0]:   File "{path}", line 40, in {function}', f"[rank0]:     {code}"]
    return "\n".join([*lines, f"[rank0]: {STACK}"]) + "\n"


FORWARD = [("/work/teams/ads/fit.py", "main", "out = net(dense, cats)"),
           (f"{SITE}/torch/nn/modules/module.py", "_call_impl", "return forward_call(*args, **kwargs)"),
           ("/work/teams/ads/ads/net.py", "forward", "z = torch.stack([d] + [t(c) for t in self.tables], 1)")]


@pytest.mark.parametrize("conf, category, first", [
    ({"model": {"table_dim": 24, "dense_layers": [32, 8]}}, "config_invalid", "fix_config"),
    ({"train": {"lr": 0.01, "max_steps": 5}}, "code_bug", "fix_code"),
])
def test_a_stack_in_the_own_models_forward_is_not_the_collate(tmp_path, conf, category, first):
    log = tmp_path / "fit.log"
    log.write_text(_stack_log(FORWARD))
    path = tmp_path / "ads.json"
    path.write_text(json.dumps(conf))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit.py --config ads.json", config_paths=[path])
    assert (result.category, result.fixes[0]["kind"]) == (category, first)


def test_a_stack_in_the_default_collate_stays_the_batchs_samples(tmp_path):
    collate = [("/work/teams/ads/fit.py", "main", "for batch in loader:"),
               (f"{SITE}/torch/utils/data/_utils/collate.py", "collate", "return torch.stack(batch, 0, out=out)")]
    log = tmp_path / "fit.log"
    log.write_text(_stack_log(collate))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit.py")
    assert result.category == "data_pipeline"


def _positions_log(code: str) -> str:
    return "\n".join([
        "Traceback (most recent call last):",
        '  File "/work/teams/clips/fit_hf.py", line 77, in <module>',
        "    trainer.train()",
        f'  File "{SITE}/transformers/models/vivid/modeling_vivid.py", line 121, in forward',
        f"    {code}",
        "RuntimeError: The size of tensor a (392) must match the size of tensor b (196) at non-singleton dimension 1",
    ]) + "\n"


@pytest.mark.parametrize("code, category", [
    # a vision model adds its whole grid of patch positions: the clips have more frames than its config
    ("embeddings = embeddings + self.position_embeddings.type_as(embeddings)", "config_invalid"),
    # a text model looks its positions up by id: a row longer than the model's positions
    ("embeddings = inputs_embeds + self.position_embeddings(position_ids)", "data_pipeline"),
])
def test_a_patch_grid_overrun_is_the_jobs_size_not_a_long_row(tmp_path, code, category):
    log = tmp_path / "fit.log"
    log.write_text(_positions_log(code))
    assert diagnose([log]).category == category


ZERO3_MERGE = f"""\
[rank2]: Traceback (most recent call last):
[rank2]:   File "/work/teams/tix/predict.py", line 44, in <module>
[rank2]:     model = model.merge_and_unload()
[rank2]:   File "{SITE}/peft/tuners/lora/layer.py", line 305, in merge
[rank2]:     base_layer.weight.data += delta_weight
[rank2]: RuntimeError: The size of tensor a (0) must match the size of tensor b (2048) at non-singleton dimension 1
"""


@pytest.mark.parametrize("stage, category", [(3, "config_invalid"), (2, "code_bug")])
def test_an_empty_weight_under_zero3_is_a_partitioned_parameter(tmp_path, stage, category):
    log = tmp_path / "predict.log"
    log.write_text(ZERO3_MERGE)
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": stage}}))
    result = diagnose([log], command="deepspeed --num_gpus 4 predict.py --deepspeed ds.json", config_paths=[ds])
    assert result.category == category
    if stage == 3:
        first = result.fixes[0]
        assert first["kind"] == "fix_config"
        assert first["config_patch"] == {"ds.json": {"zero_optimization.stage": 2}}
