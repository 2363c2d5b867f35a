"""Open what the user gave us as named binary streams, safely.

Plain files, .gz, .zip, .tar(.gz|.bz2|.xz), folders (recursively) and the tree that
`torchrun --log-dir` writes. Every byte read out of a compressed container is counted, so
bombs are stopped while streaming, never trusted from headers.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from triage.errors import InputRejected, UnusableInput
from triage.limits import Limits

READ_SIZE = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_LOGDIR_RANK = re.compile(r"(?:^|/)attempt_\d+/(\d+)/(?:stdout|stderr)\.log$")
_LOGDIR_ERROR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/error\.json$")
_NAME_RANK = re.compile(r"(?:rank|proc|worker|gpu)[_\-.]?(\d{1,5})(?:\D|$)", re.IGNORECASE)
_NODE = re.compile(r"(?:node|host)[_\-.]?(\d{1,4})(?:\D|$)", re.IGNORECASE)
_SKIP = {".DS_Store"}


@dataclass
class Source:
    name: str  # display name, used as evidence "source"
    stream: BinaryIO
    rank_hint: int | None = None  # rank this whole file belongs to (per-rank files)
    node_hint: int | None = None
    local_rank_hint: int | None = None
    is_error_file: bool = False  # torch elastic error.json
    path: Path | None = None  # set for plain files on disk (lets a faster scanner read them directly)


def kind_of(name: str) -> str:
    lower = name.lower()
    if lower.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        return "tar"
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(".gz"):
        return "gz"
    return "plain"


def sniff_kind(path: Path, name: str) -> str:
    """The container kind by name, corrected by magic bytes (uploads may be misnamed)."""
    kind = kind_of(name)
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise UnusableInput(f"cannot read {name}: {exc.strerror or exc}") from None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        return "tar" if kind == "tar" else "gz"
    return "plain" if kind in ("gz", "zip") and head else kind


class CappedReader(io.RawIOBase):
    """Counts expanded bytes and stops a bomb while it expands."""

    def __init__(self, raw: BinaryIO, name: str, budget: Budget):
        self.raw, self.name, self.budget = raw, name, budget
        self.member_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(min(len(buffer), READ_SIZE))
        if not data:
            return 0
        self.member_bytes += len(data)
        self.budget.spend(len(data), self.name, self.member_bytes)
        buffer[: len(data)] = data
        return len(data)


class Budget:
    def __init__(self, limits: Limits, compressed_bytes: int):
        self.limits, self.compressed, self.expanded, self.members = limits, max(compressed_bytes, 1), 0, 0

    def spend(self, count: int, name: str, member_bytes: int) -> None:
        self.expanded += count
        if member_bytes > self.limits.max_member_bytes:
            raise InputRejected(f"archive member {name} expands beyond {self.limits.max_member_bytes} bytes", code="archive_bomb")
        if self.expanded > self.limits.max_total_bytes:
            raise InputRejected(
                f"upload expands beyond {self.limits.max_total_bytes} bytes (possible archive bomb)", code="archive_bomb")
        if (
            self.expanded > self.limits.ratio_floor_bytes
            and self.expanded / self.compressed > self.limits.max_ratio
        ):
            raise InputRejected(
                f"upload expands more than {self.limits.max_ratio}x its compressed size (possible archive bomb)", code="archive_bomb")

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise InputRejected(f"archive has more than {self.limits.max_members} members", code="too_many_members")
        check_member_name(name)


def check_member_name(name: str) -> None:
    clean = name.replace("\\", "/")
    if clean.startswith("/") or _DRIVE.match(clean) or ".." in clean.split("/"):
        raise InputRejected(f"archive member has an unsafe path: {name!r}", code="path_traversal")


def drain(stream: BinaryIO) -> None:
    while stream.read(READ_SIZE):
        pass


def inspect_upload(path: str | Path, original_name: str, limits: Limits | None = None) -> None:
    """Reject empty files, bombs, traversal, links/devices and corrupt archives; stream, never load."""
    path = Path(path)
    limits = limits or Limits()
    try:
        size = path.stat().st_size
    except OSError:
        raise UnusableInput(f"cannot read {original_name}: no such file") from None
    if size == 0:
        raise InputRejected(f"{original_name} is empty", code="empty_file")
    if sniff_kind(path, original_name) == "plain":
        return  # plain text is read as a stream later; nothing can expand
    for source in _open_file(path, original_name, limits, depth=0):
        drain(source.stream)


def _open_file(path: Path, name: str, limits: Limits, depth: int) -> Iterator[Source]:
    kind = sniff_kind(path, name)
    size = path.stat().st_size
    if kind == "plain":
        with open(path, "rb") as handle:
            source = make_source(name, handle)
            source.path = path
            yield source
        return
    budget = Budget(limits, size)
    try:
        if kind == "gz":
            with gzip.open(path, "rb") as raw:
                inner = name[:-3] if name.lower().endswith(".gz") else name
                yield make_source(inner, io.BufferedReader(CappedReader(raw, inner, budget), READ_SIZE))
        elif kind == "zip":
            yield from _zip_members(path, name, budget)
        else:
            yield from _tar_members(path, name, budget)
    except InputRejected:
        raise
    except (
        OSError,
        EOFError,
        zipfile.BadZipFile,
        tarfile.TarError,
        gzip.BadGzipFile,
        ValueError,
        RuntimeError,
        NotImplementedError,
        zlib.error,
        lzma.LZMAError,
    ) as exc:
        raise UnusableInput(
            f"cannot read archive {name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")


def zip_member_count(path: str | Path, name: str, max_members: int) -> int:
    """Read the member count from the zip's end record, before anything parses the directory.

    Refuses a zip with more than `max_members` members (a directory of a million empty entries
    costs gigabytes to parse), and a zip whose directory does not end where the end record
    says: a truncated archive, or one with data before it. (A truncated zip that holds a stored
    inner zip otherwise reads as that inner zip.)
    """
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        tail_start = max(0, size - (_EOCD.size + 65535))
        handle.seek(tail_start)
        tail = handle.read()
        position = tail.rfind(b"PK\x05\x06")
        while position >= 0:
            if position + _EOCD.size <= len(tail):
                fields = _EOCD.unpack_from(tail, position)
                if position + _EOCD.size + fields[7] == len(tail):
                    break
            position = tail.rfind(b"PK\x05\x06", 0, position)
        if position < 0:
            raise UnusableInput(f"cannot read archive {name}: it is truncated (no end of central directory)")
        _sig, disk, cd_disk, _on_disk, total, cd_size, cd_offset, _comment = _EOCD.unpack_from(tail, position)
        end_record = tail_start + position
        if disk or cd_disk:
            raise UnusableInput(f"cannot read archive {name}: multi-part zips are not supported")
        if total == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:
            locator_at = end_record - _ZIP64_LOCATOR.size
            if locator_at < 0:
                raise UnusableInput(f"cannot read archive {name}: it is truncated")
            handle.seek(locator_at)
            signature, _disk, zip64_at, _disks = _ZIP64_LOCATOR.unpack(handle.read(_ZIP64_LOCATOR.size))
            if signature != b"PK\x06\x07" or zip64_at + _ZIP64_EOCD.size > locator_at:
                raise UnusableInput(f"cannot read archive {name}: it is truncated")
            handle.seek(zip64_at)
            record = _ZIP64_EOCD.unpack(handle.read(_ZIP64_EOCD.size))
            if record[0] != b"PK\x06\x06":
                raise UnusableInput(f"cannot read archive {name}: it is truncated")
            total, cd_size, cd_offset, end_record = record[7], record[8], record[9], zip64_at
    if total > max_members:
        raise InputRejected(f"archive {name} has more than {max_members} members", code="too_many_members")
    if cd_offset + cd_size != end_record:
        raise UnusableInput(f"cannot read archive {name}: it is truncated or has data before it")
    return total


def _zip_members(path: Path, name: str, budget: Budget) -> Iterator[Source]:
    zip_member_count(path, name, budget.limits.max_members)
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > budget.limits.max_members:
            raise InputRejected(f"archive has more than {budget.limits.max_members} members", code="too_many_members")
        for info in infos:
            budget.member(info.filename)
            mode = (info.external_attr >> 16) & 0o170000
            if mode and mode not in (0o100000, 0o040000):
                raise InputRejected(f"archive member {info.filename!r} is a link or device", code="path_traversal")
            if info.is_dir() or Path(info.filename).name in _SKIP:
                continue
            with archive.open(info) as raw:
                member_name = f"{name}/{info.filename}"
                yield make_source(
                    member_name, io.BufferedReader(CappedReader(raw, member_name, budget), READ_SIZE)
                )


def _tar_members(path: Path, name: str, budget: Budget) -> Iterator[Source]:
    with open(path, "rb") as handle, tarfile.open(fileobj=handle, mode="r|*") as archive:
        for member in archive:
            budget.member(member.name)
            if member.issym() or member.islnk() or member.isdev() or member.isfifo() or member.ischr():
                raise InputRejected(f"archive member {member.name!r} is a link or device", code="path_traversal")
            if not member.isfile() or Path(member.name).name in _SKIP:
                continue
            if member.size > budget.limits.max_member_bytes:
                raise InputRejected(
                    f"archive member {member.name!r} is larger than {budget.limits.max_member_bytes} bytes", code="archive_bomb")
            stream = archive.extractfile(member)
            if stream is not None:
                member_name = f"{name}/{member.name}"
                yield make_source(
                    member_name, io.BufferedReader(CappedReader(stream, member_name, budget), READ_SIZE)
                )


def make_source(name: str, stream: BinaryIO) -> Source:
    clean = name.replace("\\", "/")
    source = Source(name=name, stream=stream)
    match = _LOGDIR_RANK.search(clean) or _LOGDIR_ERROR.search(clean)
    base = clean.rsplit("/", 1)[-1]
    if match:
        source.local_rank_hint = int(match.group(1))
    else:
        named = _NAME_RANK.search(base)
        if named:
            source.rank_hint = int(named.group(1))
    node = _NODE.search(clean)
    if node:
        source.node_hint = int(node.group(1))
    source.is_error_file = base == "error.json"
    return source


def open_sources(
    paths: Sequence[str | Path], limits: Limits | None = None, names: Mapping[str, str] | None = None
) -> Iterator[Source]:
    """Yield every readable log stream; consume each before asking for the next."""
    limits = limits or Limits()
    names = {str(k): v for k, v in (names or {}).items()}
    for raw_path in paths:
        path = Path(raw_path)
        display = names.get(str(raw_path)) or path.name or str(path)
        if not path.exists():
            raise UnusableInput(f"no such file or folder: {display}")
        if path.is_dir():
            yield from _walk(path, display, limits)
        else:
            yield from _open_file(path, display, limits, depth=0)


def _walk(folder: Path, display: str, limits: Limits) -> Iterator[Source]:
    count = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for file_name in sorted(files):
            full = Path(root) / file_name
            if file_name in _SKIP or full.is_symlink() or not full.is_file():
                continue
            count += 1
            if count > limits.max_members:
                raise InputRejected(f"folder {display} has more than {limits.max_members} files", code="too_many_members")
            relative = full.relative_to(folder).as_posix()
            yield from _open_file(full, f"{display}/{relative}", limits, depth=0)
