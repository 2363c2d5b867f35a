"""Fingerprints group the same failure across runs and split different failures."""

from __future__ import annotations

from triage_helpers import write

from triage import diagnose

TEMPLATE = """{ts} I1130 node {host}: starting pid {pid}
[rank{rank}]: Traceback (most recent call last):
[rank{rank}]:   File "{home}/train.py", line 210, in __getitem__
[rank{rank}]:     return self.rows[i]["conversations"]
[rank{rank}]: KeyError: 'conversations'
E1130 {ts} {pid} api.py:1002] failed (exitcode: 1) local_rank: {rank} (pid: {pid}) of binary: /usr/bin/python
"""


def run(tmp_path, name, **values):
    return diagnose([write(tmp_path / name, TEMPLATE.format(**values))])


def test_it_gives_the_same_fingerprint_to_the_same_failure_in_another_run(tmp_path):
    first = run(
        tmp_path, "a.log", ts="15:03:45.070000", host="gpu-a-01", pid=71412, rank=1, home="/home/alice"
    )
    second = run(
        tmp_path, "b.log", ts="09:11:02.000001", host="10.2.3.4", pid=5, rank=6, home="/mnt/bob/work"
    )
    assert first.fingerprint == second.fingerprint
    assert first.failing_rank == 1 and second.failing_rank == 6


def test_it_gives_a_different_fingerprint_to_a_different_failure(tmp_path):
    first = run(tmp_path, "a.log", ts="15:03:45.070000", host="h1", pid=1, rank=1, home="/h")
    other = diagnose(
        [
            write(
                tmp_path / "c.log",
                "torch.cuda.OutOfMemoryError: CUDA out of memory. "
                "Tried to allocate 2.00 GiB (GPU 1; 79 GiB total capacity)\n",
            )
        ]
    )
    assert first.fingerprint != other.fingerprint


def test_it_separates_different_missing_fields(tmp_path):
    first = run(tmp_path, "a.log", ts="1", host="h", pid=1, rank=0, home="/h")
    other = diagnose(
        [
            write(
                tmp_path / "d.log",
                TEMPLATE.format(ts="1", host="h", pid=1, rank=0, home="/h").replace(
                    "conversations", "messages"
                ),
            )
        ]
    )
    assert first.fingerprint != other.fingerprint
