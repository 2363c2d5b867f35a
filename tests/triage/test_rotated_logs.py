"""A log rotated by its writer (logging's RotatingFileHandler: train.log.2, train.log.1, train.log) is one
stream: its files are read oldest first, and a traceback cut by the rotation keeps its start and its rank."""

from __future__ import annotations

from triage import diagnose
from triage.sources import rotation_order

HEAD = ("2026-11-30 04:13:01,002 [rank0] INFO train: step 400 loss 2.1\n"
        "2026-11-30 04:13:02,744 [rank3] ERROR train: uncaught exception, shutting down\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/lm/train.py", line 231, in main\n'
        "    for batch in loader:\n")
TAIL = ('  File "/opt/lm/shards.py", line 58, in __iter__\n'
        "    rec = json.loads(line)\n"
        "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 512 (char 511)\n"
        "2026-11-30 04:13:03,100 [rank0] INFO train: waiting for peers\n")


def test_rotated_files_sort_oldest_first():
    names = ["train.log", "train.log.1", "eval.log", "train.log.2", "notes.txt"]
    assert sorted(names, key=rotation_order) == ["eval.log", "notes.txt", "train.log.2", "train.log.1", "train.log"]


def test_a_traceback_cut_by_the_rotation_is_one_traceback_of_its_rank(tmp_path):
    (tmp_path / "train.log.1").write_text(HEAD, encoding="utf-8")
    (tmp_path / "train.log").write_text(TAIL, encoding="utf-8")
    for paths in ([tmp_path / "train.log", tmp_path / "train.log.1"], [tmp_path]):  # files given, or the folder
        result = diagnose(paths)
        assert (result.category, result.failing_rank) == ("data_corrupt", 3)
        assert result.root_cause.exception == "JSONDecodeError"
