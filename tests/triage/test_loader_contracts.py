"""Two readings of a TypeError raised while batches are built: one library rebuilding another's loader with an
argument it already binds is the pair of releases; the default collate meeting objects of a dotted class is the
loader the script chose. A None in the batch stays what a row gave."""

from __future__ import annotations

from tests.triage.triage_helpers import diagnose_text

SITE = "/opt/venv/lib/python3.10/site-packages"


def _tb(frames: list[tuple[str, str, str]], last: str) -> str:
    body = "".join(f'  File "{path}", line 10, in {function}\n    {code}\n' for path, function, code in frames)
    return f"Traceback (most recent call last):\n{body}{last}\n"


def test_a_library_rebuilding_another_librarys_loader_is_the_releases(tmp_path):
    text = _tb([
        ("/home/gl/graphs/train.py", "main", "trainer.fit(model, datamodule=dm)"),
        (f"{SITE}/lightning_lite/data_loading.py", "replace_sampler", "dataloader = type(dataloader)(**dl_kwargs)"),
        (f"{SITE}/graphkit/loader/sampled_loader.py", "__init__", "super().__init__(seeds, collate_fn=self.sample,"),
    ], "TypeError: __init__() got multiple values for argument 'dataset'")
    result = diagnose_text(tmp_path, text)
    assert (result.category, result.fixes[0]["kind"]) == ("version_mismatch", "pin_versions")


def _collate(found: str) -> str:
    return _tb([
        ("/home/gl/graphs/train.py", "train_epoch", "for batch in loader:"),
        (f"{SITE}/torch/utils/data/dataloader.py", "__next__", "data = self._next_data()"),
        (f"{SITE}/torch/utils/data/_utils/collate.py", "collate", "raise TypeError(default_collate_err_msg_format"),
    ], f"TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {found}")


def test_the_default_collate_meeting_a_librarys_objects_is_the_scripts_loader(tmp_path):
    result = diagnose_text(tmp_path, _collate("<class 'graphkit.data.graph.Graph'>"))
    assert (result.category, result.fixes[0]["kind"]) == ("code_bug", "fix_code")


def test_a_none_in_the_batch_is_not_read_as_the_loader(tmp_path):
    result = diagnose_text(tmp_path, _collate("<class 'NoneType'>"))
    assert result.category != "code_bug"
