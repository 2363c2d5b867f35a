"""A project's own exception class, raised by its own code: its name and message say which part broke.
And an exception line is read whatever its length (a whole damaged row quoted in the message)."""

from __future__ import annotations

import pytest

from triage import diagnose

SITE = "/usr/lib/python3/site-packages"
DATA = [("/srv/chem/train.py", "main", "for batch in loader:"),
        (f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch", "data = [self.dataset[i] for i in idx]"),
        ("/srv/chem/train.py", "__getitem__", "g = to_graph(self.rows[i])"),
        ("/srv/chem/chemlib/reader.py", "to_graph", "raise MolReadError(f'bad token {tok!r} in {s!r}')")]
MODEL = [("/srv/chem/train.py", "main", "out = model(batch)"),
         ("/srv/chem/chemlib/net.py", "forward", "raise RouterStateError('experts out of sync')")]


def _run(tmp_path, frames, last):
    lines = ["Traceback (most recent call last):"]
    for path, function, code in frames:
        lines += [f'  File "{path}", line 19, in {function}', f"    {code}"]
    (tmp_path / "train.log").write_text("\n".join(f"[rank1]: {line}" for line in [*lines, last]) + "\n")
    return diagnose([tmp_path / "train.log"])


@pytest.mark.parametrize("frames, last, category, first", [
    # a reader's own parse error on a row written in another notation
    (DATA, "chemlib.reader.MolReadError: bad token 'h' in 'InChI=1S/CH4/h1H4'", "data_pipeline", "fix_data_file"),
    (DATA, "chemlib.reader.RecordParseError: bad token 'h' in 'InChI=1S/CH4/h1H4'", "data_schema", "fix_data_file"),
    # the same error on a value full of NUL bytes: the file is damaged
    (DATA, "chemlib.reader.RecordParseError: bad token '\\x00' in 'CCO" + "\\x00" * 40 + "'", "data_corrupt",
     "fix_data_file"),
    # a settings class of the project's own
    (MODEL, "chemlib.net.ConfigMismatchError: experts out of sync", "config_invalid", "fix_config"),
    # any other class of its own, outside the data code: its code
    (MODEL, "chemlib.net.RouterStateError: experts out of sync", "code_bug", "fix_code"),
])
def test_own_class_by_name_and_place(tmp_path, frames, last, category, first):
    result = _run(tmp_path, frames, last)
    assert result.category == category
    assert result.fixes[0]["kind"] == first


def test_a_library_class_is_not_taken_for_the_projects(tmp_path):
    frames = [("/srv/chem/train.py", "main", "model = load(args.path)")]
    result = _run(tmp_path, frames, "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error")
    assert result.category == "model_load"


def test_an_exception_line_of_any_length_is_read(tmp_path):
    row = "C1CC1N" + "\\x00" * 1500  # about 6,000 characters once written out
    result = _run(tmp_path, DATA, f"chemlib.reader.RecordParseError: bad token '\\x00' in '{row}'")
    assert result.root_cause.exception == "RecordParseError"
    assert result.root_cause.message.startswith("bad token")
    assert len(result.root_cause.message) <= 2000


def test_a_model_folder_a_library_restores_from_is_the_models_path(tmp_path):
    frames = [("/work/ft/run.py", "main", "llm.finetune(model=model, resume=resume)"),
              (f"{SITE}/nemo/lightning/resume.py", "_try_restore_tokenizer", "context = io.load_context(path)"),
              (f"{SITE}/nemo/lightning/io/api.py", "load_context", "return load(path)"),
              (f"{SITE}/nemo/lightning/io/mixin.py", "load", "raise FileNotFoundError(f\"No such file: '{p}'\")")]
    result = _run(tmp_path, frames, "FileNotFoundError: No such file: '/models/llama-8b/weights/context'")
    assert result.category == "model_load"
    assert result.fixes[0]["kind"] == "fix_path"
