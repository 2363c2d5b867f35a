"""A missing module: the project's own file (an unsynced node, another working directory) or installed software."""

from __future__ import annotations

import pytest

from triage import diagnose
from triage.rules.packages import installed_software, missing_module

USER_IMPORT = """\
[rank3]: Traceback (most recent call last):
[rank3]:   File "/scratch/jobs/run42/finetune.py", line 12, in <module>
[rank3]:     from {module} import {name}
[rank3]: ModuleNotFoundError: No module named '{module}'
"""

LAZY_IMPORT = """\
Traceback (most recent call last):
  File "/home/kim/proj/train_cls.py", line 88, in build_scorer
    return importlib.import_module(args.scorer).Scorer()
  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import
  File "<frozen importlib._bootstrap>", line 1140, in _find_and_load_unlocked
ModuleNotFoundError: No module named 'scorers_local'
"""

LIBRARY_IMPORT = """\
Traceback (most recent call last):
  File "/home/kim/proj/train_cls.py", line 5, in <module>
    import somekit.trainer
  File "/opt/venv/lib/python3.11/site-packages/somekit/trainer.py", line 9, in <module>
    from ._fastpath import fuse
ModuleNotFoundError: No module named 'somekit_fastpath'
"""


def _diagnose(tmp_path, text):
    log = tmp_path / "log.txt"
    log.write_text(text)
    return diagnose([log])


@pytest.mark.parametrize("module", ["tokfix", "evalhelpers.rouge_local"])
def test_the_scripts_own_module_missing_is_a_path_to_fix(tmp_path, module):
    result = _diagnose(tmp_path, USER_IMPORT.format(module=module, name="thing"))
    assert result.category == "code_bug"
    assert [fix["kind"] for fix in result.fixes][:2] == ["fix_path", "fix_code"]
    assert result.failing_rank == 3 and module in result.summary


@pytest.mark.parametrize("module", ["flash_attn", "deepspeed.ops.adam", "torch._six", "fused_dense_cuda", "yaml"])
def test_a_package_or_compiled_extension_missing_is_a_version_problem(tmp_path, module):
    result = _diagnose(tmp_path, USER_IMPORT.format(module=module, name="thing"))
    assert result.category == "version_mismatch"
    assert result.fixes[0]["kind"] == "pin_versions"


def test_a_module_named_through_import_module_is_imported_by_its_caller(tmp_path):
    result = _diagnose(tmp_path, LAZY_IMPORT)
    assert result.category == "code_bug" and result.fixes[0]["kind"] == "fix_path"


def test_a_library_importing_a_module_it_lacks_is_a_version_problem(tmp_path):
    result = _diagnose(tmp_path, LIBRARY_IMPORT)
    assert result.category == "version_mismatch"


def test_names_of_installed_software():
    assert missing_module("ModuleNotFoundError: No module named 'a.b_c'") == "a.b_c"
    assert missing_module("ImportError: cannot import name 'x' from 'y'") is None
    assert installed_software("json") and installed_software("transformers.models.x") and installed_software("amp_C")
    assert not installed_software("textnorm") and not installed_software("my_utils.metrics")


STATE_DICT = """\
Traceback (most recent call last):
  File "/work/rl/warmstart.py", line 31, in <module>
    policy.load_state_dict(torch.load(args.init, map_location="cpu"))
  File "/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 2593, in load_state_dict
    raise RuntimeError(
RuntimeError: Error(s) in loading state_dict for PolicyNet:
\t{detail}
"""


@pytest.mark.parametrize("detail, first_fix", [
    ('Missing key(s) in state_dict: "trunk.0.weight". Unexpected key(s) in state_dict: "module.trunk.0.weight".',
     "fix_code"),
    ("size mismatch for head.weight: copying a param with shape torch.Size([6, 64]) from checkpoint, the shape in "
     "current model is torch.Size([4, 64]).", "fix_config"),
])
def test_names_that_differ_are_the_codes_sizes_that_differ_the_configs(tmp_path, detail, first_fix):
    result = _diagnose(tmp_path, STATE_DICT.format(detail=detail))
    assert result.category == "model_load" and result.fixes[0]["kind"] == first_fix


WEIGHTS_ONLY = """\
Traceback (most recent call last):
  File "/work/rl/resume.py", line 12, in restore
    state = torch.load(path)
  File "/env/lib/python3.11/site-packages/torch/serialization.py", line 1529, in load
    raise pickle.UnpicklingError(_get_wo_message(str(e))) from None
_pickle.UnpicklingError: Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will likely succeed.
\tWeightsUnpickler error: {detail}
"""


@pytest.mark.parametrize("detail, category", [
    ("Unsupported global: GLOBAL omegaconf.dictconfig.DictConfig was not an allowed global by default.",
     "version_mismatch"),
    ("Unpickler found an invalid load key 'v'.", "model_load"),
])
def test_a_refused_pickled_class_is_torchs_new_default_not_a_damaged_file(tmp_path, detail, category):
    result = _diagnose(tmp_path, WEIGHTS_ONLY.format(detail=detail))
    assert result.category == category
    if category == "version_mismatch":
        assert [fix["kind"] for fix in result.fixes][:2] == ["fix_code", "pin_versions"]


ZIP_CUT = """\
Traceback (most recent call last):
  File "/opt/lab/prep_ddp.py", line 88, in {function}
    blob = torch.load(where)
  File "/env/lib/python3.11/site-packages/torch/serialization.py", line 1568, in load
    with _open_zipfile_reader(opened_file) as opened_zipfile:
RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory
"""


@pytest.mark.parametrize("function, category", [
    ("load_tokens", "data_corrupt"),
    ("load_shard", "data_corrupt"),
    ("load_pretrained", "model_load"),
    ("restore_checkpoint", "storage"),  # the run's own save, cut short: the save did not finish
])
def test_a_cut_torch_file_the_script_reads_as_rows_is_its_data(tmp_path, function, category):
    # the same unreadable zip is a damaged data cache where the script's function loads rows, tokens or a
    # shard, damaged weights where it loads them, and an unfinished save where it restores the run's own
    assert _diagnose(tmp_path, ZIP_CUT.format(function=function)).category == category


@pytest.mark.parametrize("line, category, first_fix", [
    ("ImportError: cannot import name 'load_dataset' from 'datasets' (/home/ci/job7/datasets.py)",
     "code_bug", "fix_path"),
    ("ImportError: cannot import name 'pack_rows' from 'batching' (/home/ci/job7/batching.py)", "code_bug", "fix_code"),
    ("ImportError: cannot import name 'get_template' from 'llamafactory.data' "
     "(/home/ci/LLaMA-Factory/src/llamafactory/data/__init__.py)", "version_mismatch", "pin_versions"),
    ("ImportError: cannot import name 'load_dataset' from 'datasets' "
     "(/opt/env/lib/python3.11/site-packages/datasets/__init__.py)", "version_mismatch", "pin_versions"),
], ids=["stray-file-hides-package", "own-module-lacks-name", "editable-checkout", "installed-package"])
def test_the_file_python_imported_says_whose_the_import_is(tmp_path, line, category, first_fix):
    text = ('Traceback (most recent call last):\n  File "/home/ci/job7/train.py", line 3, in <module>\n'
            "    from x import y\n" + line + "\n")
    result = _diagnose(tmp_path, text)
    assert result.category == category and result.fixes[0]["kind"] == first_fix


EMBEDDINGS = """\
Traceback (most recent call last):
  File "/work/sft/stage2.py", line 61, in main
    model.load_state_dict(state)
RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:
\tsize mismatch for model.embed_tokens.weight: copying a param with shape torch.Size([{saved}]) from checkpoint, the shape in current model is torch.Size([{current}]).
"""


@pytest.mark.parametrize("saved, current, first_fix", [
    ("32003, 4096", "32000, 4096", "fix_code"),     # three tokens added in training: resize the embeddings
    ("151668, 3584", "152064, 3584", "fix_config"),  # fewer rows than the model's padded vocabulary
    ("55296, 4096", "32000, 4096", "fix_config"),   # another, extended tokenizer
    ("75, 48", "75, 32", "fix_path"),               # the same rows, another width: another model's checkpoint
])
def test_what_an_embedding_mismatch_says_about_the_checkpoint(tmp_path, saved, current, first_fix):
    result = _diagnose(tmp_path, EMBEDDINGS.format(saved=saved, current=current))
    assert result.category == "model_load" and result.fixes[0]["kind"] == first_fix


CACHE_CUT = """\
Traceback (most recent call last):
  File "/opt/kd/kd.py", line 119, in distill
    {code}
  File "/env/lib/python3.11/site-packages/torch/serialization.py", line 1568, in load
    with _open_zipfile_reader(opened_file) as opened_zipfile:
RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory
"""


@pytest.mark.parametrize("code, category", [
    ("cache = torch.load(cp, weights_only=True)", "data_corrupt"),
    ("teacher_logits = torch.load(path)", "data_corrupt"),
    ("state = torch.load(cfg.init_from)", "model_load"),
])
def test_what_the_script_loads_a_cut_torch_file_into_says_whether_it_was_data(tmp_path, code, category):
    assert _diagnose(tmp_path, CACHE_CUT.format(code=code)).category == category


def test_numpy_refusing_a_seed_the_script_computed_is_the_scripts_bug(tmp_path):
    text = ('Traceback (most recent call last):\n  File "/opt/kd/kd.py", line 66, in setup\n'
            "    np.random.seed(seed)\n"
            '  File "numpy/random/mtrand.pyx", line 4831, in numpy.random.mtrand.seed\n'
            '  File "numpy/random/_mt19937.pyx", line 182, in numpy.random._mt19937.MT19937._legacy_seeding\n'
            "ValueError: Seed must be between 0 and 2**32 - 1\n")
    result = _diagnose(tmp_path, text)
    assert (result.category, result.fixes[0]["kind"]) == ("code_bug", "fix_code")


def test_a_models_downloaded_code_is_not_the_teams_own(tmp_path):
    # trust_remote_code: transformers runs the model's own modeling file from its module cache; two GPUs'
    # tensors meeting there are the model spread over the GPUs of one rank, not a line the team wrote
    from tests.triage.triage_helpers import diagnose_text

    text = ("Traceback (most recent call last):\n"
            '  File "/home/ab/sft/train.py", line 301, in <module>\n'
            "    trainer.train()\n"
            '  File "/opt/venv/lib/python3.10/site-packages/transformers/trainer.py", line 2735, in training_step\n'
            "    loss = self.compute_loss(model, inputs)\n"
            '  File "/home/ab/.cache/huggingface/modules/transformers_modules/Chat-7B/modeling_chat.py", line 901, '
            "in rotate\n"
            "    q = q * cos + rotate_half(q) * sin\n"
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:3 and cuda:2!\n")
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 4 train.py")
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")
