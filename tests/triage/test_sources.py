"""Uploads and archives are read safely: bombs, traversal, links and empties are rejected while streaming."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile

import pytest
from triage_helpers import write

from triage import InputRejected, Limits, UnusableInput, diagnose, inspect_upload

SMALL = Limits(max_total_bytes=50 * 1024 * 1024, max_ratio=100, ratio_floor_bytes=1024 * 1024)


def zeros_zip(path, size):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("rank0.log", "w") as member:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(size // len(chunk)):
                member.write(chunk)
    return path


def test_it_passes_a_plain_text_log(tmp_path):
    inspect_upload(write(tmp_path / "u1", "KeyError: 'x'\n"), "train.log")


def test_it_rejects_an_empty_upload(tmp_path):
    with pytest.raises(InputRejected, match="empty"):
        inspect_upload(write(tmp_path / "u2", b""), "train.log")


def test_it_stops_a_zip_bomb_while_streaming(tmp_path):
    bomb = zeros_zip(tmp_path / "bomb", 64 * 1024 * 1024)
    with pytest.raises(InputRejected, match="bomb"):
        inspect_upload(bomb, "logs.zip", SMALL)


def test_it_stops_a_gzip_bomb_without_trusting_the_header(tmp_path):
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb") as handle:
        for _ in range(64):
            handle.write(b"\0" * (1024 * 1024))
    bomb = write(tmp_path / "bomb", raw.getvalue())
    with pytest.raises(InputRejected):
        inspect_upload(bomb, "log.gz", SMALL)


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "/abs/rank0.log", "C:/windows/rank0.log", "a/../../b.log"]
)
def test_it_rejects_path_traversal_in_a_zip(tmp_path, name):
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, "hello\n")
    with pytest.raises(InputRejected, match="unsafe path"):
        inspect_upload(path, "evil.zip")


def test_it_rejects_a_symlink_in_a_tar(tmp_path):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        link = tarfile.TarInfo("rank0.log")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/shadow"
        archive.addfile(link)
    with pytest.raises(InputRejected, match="link"):
        inspect_upload(path, "evil.tar.gz")


def test_it_rejects_traversal_in_a_tar(tmp_path):
    path = tmp_path / "evil.tgz"
    with tarfile.open(path, "w:gz") as archive:
        data = b"x\n"
        info = tarfile.TarInfo("../outside.log")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(InputRejected):
        inspect_upload(path, "evil.tgz")


def test_it_rejects_too_many_members(tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for index in range(30):
            archive.writestr(f"r{index}.log", "x\n")
    with pytest.raises(InputRejected, match="members"):
        inspect_upload(path, "many.zip", Limits(max_members=10))


def test_it_calls_a_corrupt_archive_unusable(tmp_path):
    path = write(tmp_path / "bad", b"PK\x03\x04 this is not really a zip")
    with pytest.raises(UnusableInput):
        inspect_upload(path, "logs.zip")


def test_it_reads_a_torchrun_log_dir_tree_inside_a_tar(tmp_path):
    path = tmp_path / "run.tar.gz"
    files = {
        "run/attempt_0/0/stderr.log": "[rank0]: RuntimeError: Connection closed by peer [127.0.0.1]:4000\n",
        "run/attempt_0/1/stderr.log": (
            "Traceback (most recent call last):\n"
            '  File "/w/train.py", line 9, in __getitem__\n'
            "    return row['conversations']\n"
            "KeyError: 'conversations'\n"
        ),
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    result = diagnose([path], names={str(path): "upload.tar.gz"})
    assert result.category == "data_schema"
    assert result.failing_rank == 1
    assert result.root_cause.evidence[0].source.startswith("upload.tar.gz/")


def test_it_reads_gz_and_folders(tmp_path):
    folder = tmp_path / "logs"
    write(folder / "rank0.log", "all good\n")
    write(folder / "rank3.log", "OSError: [Errno 28] No space left on device\n")
    gz = tmp_path / "extra.log.gz"
    gz.write_bytes(gzip.compress(b"nothing here\n"))
    result = diagnose([folder, gz])
    assert result.category == "storage"
    assert result.failing_rank == 3


def test_it_calls_an_encrypted_zip_member_unusable_not_a_crash(tmp_path):
    path = tmp_path / "enc.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("rank0.log", "x\n")
    raw = bytearray(path.read_bytes())
    raw[6] |= 0x1  # set the "encrypted" flag of the local header
    central = raw.find(b"PK\x01\x02")
    raw[central + 8] |= 0x1
    path.write_bytes(bytes(raw))
    with pytest.raises(UnusableInput):
        inspect_upload(path, "enc.zip")


@pytest.mark.parametrize("name, rank", [
    ("rank3.log", 3), ("worker_3.txt", 3), ("azureml-logs/70_driver_log_5.txt", 5),
    ("user_logs/std_log_process_6.txt", 6), ("train.log", None),
    # a Kubernetes job's replica pod holds one node's launcher and all of its ranks
    ("kubectl-logs-vitdet-ft-worker-1.txt", None), ("sft-job-master-0.log", None),
])
def test_a_per_process_files_name_gives_its_rank(name, rank):
    from triage.sources import make_source

    assert make_source(name, io.BytesIO(b"")).rank_hint == rank
