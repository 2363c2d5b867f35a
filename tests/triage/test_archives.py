"""The one archive reader (triage.archives): its refusals carry a code, whoever reads through it."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from triage import InputRejected, Limits, UnusableInput
from triage.archives import Budget, member_names, member_path, members, open_member


def zip_of(path, files: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def read_all(path, kind, budget):
    return {member.path: member.stream.read() for member in members(path, path.name, kind, budget)}


def test_it_yields_regular_members_with_checked_paths(tmp_path):
    path = zip_of(tmp_path / "run.zip", {"logs\\0\\stdout.log": b"a\n", "logs/1/stdout.log": b"b\n"})
    assert read_all(path, "zip", Budget(Limits(), path.stat().st_size)) == {
        "logs/0/stdout.log": b"a\n", "logs/1/stdout.log": b"b\n"}


@pytest.mark.parametrize("name", ["../escape.log", "/etc/passwd", "C:\\Windows\\x.log", "a/../../b.log"])
def test_a_member_that_climbs_out_is_refused_with_its_code(tmp_path, name):
    path = zip_of(tmp_path / "run.zip", {name: b"x\n"})
    with pytest.raises(InputRejected) as caught:
        read_all(path, "zip", Budget(Limits(), path.stat().st_size))
    assert caught.value.code == "path_traversal"
    with pytest.raises(InputRejected):
        member_path(name)


def test_too_many_members_are_counted_from_the_end_record(tmp_path):
    path = zip_of(tmp_path / "run.zip", {f"rank{i}.log": b"x\n" for i in range(5)})
    with pytest.raises(InputRejected) as caught:
        read_all(path, "zip", Budget(Limits(max_members=4), path.stat().st_size))
    assert caught.value.code == "too_many_members"
    with open(path, "rb") as handle, pytest.raises(InputRejected):
        member_names(handle, "run.zip", "zip", limit=10, max_members=4)


def test_a_truncated_zip_is_unusable_with_code_bad_archive(tmp_path):
    whole = zip_of(tmp_path / "whole.zip", {"rank0.log": b"x\n" * 100}).read_bytes()
    path = tmp_path / "cut.zip"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UnusableInput) as caught:
        read_all(path, "zip", Budget(Limits(), path.stat().st_size))
    assert caught.value.code == "bad_archive" and "truncated" in str(caught.value)


def test_bytes_spent_before_count_against_the_whole_upload(tmp_path):
    path = zip_of(tmp_path / "run.zip", {"rank0.log": b"x" * 1000})
    limits = Limits(max_total_bytes=1500)
    assert read_all(path, "zip", Budget(limits, path.stat().st_size, spent=0))
    with pytest.raises(InputRejected) as caught:
        read_all(path, "zip", Budget(limits, path.stat().st_size, spent=600))
    assert caught.value.code == "archive_bomb"


def test_a_link_in_a_tar_is_refused(tmp_path):
    path = tmp_path / "run.tar"
    with tarfile.open(path, "w") as archive:
        link = tarfile.TarInfo("rank0.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    with pytest.raises(InputRejected) as caught:
        read_all(path, "tar", Budget(Limits(), path.stat().st_size))
    assert caught.value.code == "path_traversal"


def test_open_member_reads_one_member_by_name_or_says_keyerror(tmp_path):
    path = tmp_path / "run.tar"
    with tarfile.open(path, "w") as archive:
        info = tarfile.TarInfo("logs/rank0.log")
        info.size = 3
        archive.addfile(info, io.BytesIO(b"hi\n"))
    with open(path, "rb") as handle, open_member(handle, "tar", "logs/rank0.log") as member:
        assert member.read() == b"hi\n"
    with open(path, "rb") as handle, pytest.raises(KeyError), open_member(handle, "tar", "nope"):
        pass
