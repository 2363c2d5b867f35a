"""The Trainer finding no column its model takes: raw columns dropped before the collator (the setting), or a
dataset left with no columns at all (a filter emptied it)."""

from __future__ import annotations

import json

from triage import diagnose

SITE = "/opt/env/lib/python3.11/site-packages"


def _log(ignored: str) -> str:
    return "\n".join([
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/lines/fit_ocr.py", line 120, in <module>',
        "[rank0]:     trainer.train()",
        f'[rank0]:   File "{SITE}/transformers/trainer.py", line 1231, in _remove_unused_columns',
        "[rank0]:     raise ValueError(",
        "[rank0]: ValueError: No columns in the dataset match the model's forward method signature: (pixel_values, "
        f"labels, return_dict, kwargs). The following columns have been ignored: [{ignored}]. Please check the "
        "dataset and model. You may need to set `remove_unused_columns=False` in `TrainingArguments`.",
    ]) + "\n"


def test_raw_columns_dropped_before_the_collator_keep_them(tmp_path):
    log = tmp_path / "ocr.log"
    log.write_text(_log("scan, transcript, uid"))
    conf = tmp_path / "ocr.json"
    conf.write_text(json.dumps({"output_dir": "out", "remove_unused_columns": True, "learning_rate": 3e-4}))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit_ocr.py ocr.json", config_paths=[conf])
    assert result.category == "config_invalid"
    first = result.fixes[0]
    assert first["kind"] == "fix_config"
    assert first["config_patch"] == {"ocr.json": {"remove_unused_columns": False}}


def test_no_columns_at_all_is_a_dataset_left_empty(tmp_path):
    log = tmp_path / "ocr.log"
    log.write_text(_log(""))
    result = diagnose([log], command="torchrun --nproc_per_node 2 fit_ocr.py --min_words 100")
    assert result.category == "data_pipeline"
    assert result.fixes[0]["kind"] == "fix_config"


EMPTY = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/srv/clm/run_clm.py", line 300, in <module>
[rank0]:     loader = DataLoader(train_set, shuffle=True, batch_size=4)
[rank0]:   File "/opt/env/lib/python3.11/site-packages/torch/utils/data/sampler.py", line 165, in __init__
[rank0]:     raise ValueError(
[rank0]: ValueError: num_samples should be a positive integer value, but got num_samples=0
"""


def test_an_empty_dataset_in_a_job_that_sets_limits_names_the_setting_first(tmp_path):
    log = tmp_path / "clm.log"
    log.write_text(EMPTY)
    limited = diagnose([log], command="accelerate launch run_clm.py --train_file notes.txt --block_size 8192")
    assert limited.category == "data_pipeline"
    assert limited.fixes[0]["kind"] == "fix_config"
    plain = diagnose([log], command="accelerate launch run_clm.py --train_file notes.txt")
    assert plain.fixes[0]["kind"] == "fix_path"
