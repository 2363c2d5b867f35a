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
