"""The one reader of archive members: .zip, .tar(.gz|.bz2|.xz) and .gz, for the engine, the upload
service (jobs.archives) and the log viewer (jobs.logfiles).

Refusals are errors that carry a `.code` (triage.errors): an archive bomb, too many members, a
member path that climbs out (`..`, `/abs`, `C:`), a link or device member, a truncated archive.
A zip's member count is read from its end record before anything parses its directory. Every
byte read out of a container is counted while it streams (`Budget`), never trusted from headers.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from triage.errors import InputRejected, UnusableInput
from triage.limits import Limits

READ_SIZE = 1024 * 1024
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
# What a corrupt or truncated container raises while it is opened or read.
READ_ERRORS = (
    OSError, EOFError, ValueError, RuntimeError, NotImplementedError, zlib.error, lzma.LZMAError,
    zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile,
)
_DRIVE = re.compile(r"^[A-Za-z]:")
_REGULAR, _DIRECTORY = 0o100000, 0o040000


def kind_of(name: str) -> str:
    """tar | zip | gz | plain, by the file name."""
    lower = name.lower()
    if lower.endswith(TAR_SUFFIXES):
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


def gz_inner_name(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


def first_line(exc: BaseException) -> str:
    """An exception as one line for a message: its first line, else its class name."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def unreadable(name: str, exc: BaseException) -> UnusableInput:
    """The error for a container that cannot be read (corrupt, truncated): code bad_archive."""
    return UnusableInput(f"cannot read archive {name}: {first_line(exc)}")


def member_path(raw: str) -> str:
    """A member's path with `/` separators; refuses one that climbs out of its folder (path_traversal)."""
    clean = raw.replace("\\", "/")
    if clean.startswith("/") or _DRIVE.match(clean) or ".." in clean.split("/"):
        raise InputRejected(f"archive member has an unsafe path: {raw!r}", code="path_traversal")
    return clean


def _link(raw: str) -> InputRejected:
    return InputRejected(f"archive member {raw!r} is a link or device", code="path_traversal")


class Budget:
    """What one container (or one upload: `spent` bytes already expanded) may expand to."""

    def __init__(self, limits: Limits, compressed_bytes: int, spent: int = 0):
        self.limits, self.compressed = limits, max(compressed_bytes, 1)
        self.expanded, self.members, self.spent = 0, 0, spent

    def spend(self, count: int, name: str, member_bytes: int) -> None:
        self.expanded += count
        limits = self.limits
        if member_bytes > limits.max_member_bytes:
            raise InputRejected(f"archive member {name} expands beyond {limits.max_member_bytes} bytes",
                                code="archive_bomb")
        if self.spent + self.expanded > limits.max_total_bytes:
            raise InputRejected(f"upload expands beyond {limits.max_total_bytes} bytes (possible archive bomb)",
                                code="archive_bomb")
        if self.expanded > limits.ratio_floor_bytes and self.expanded / self.compressed > limits.max_ratio:
            raise InputRejected(
                f"upload expands more than {limits.max_ratio}x its compressed size (possible archive bomb)",
                code="archive_bomb")

    def member(self, raw: str) -> str:
        """Count one member and check its path; return the path with `/` separators."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise InputRejected(f"archive has more than {self.limits.max_members} members", code="too_many_members")
        return member_path(raw)


class Capped(io.RawIOBase):
    """A member's stream that spends every byte it yields from the budget (a bomb stops while expanding)."""

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


def capped(raw: BinaryIO, name: str, budget: Budget) -> io.BufferedReader:
    return io.BufferedReader(Capped(raw, name, budget), READ_SIZE)


def gunzip(stream: BinaryIO, name: str, budget: Budget) -> io.BufferedReader:
    """A gzip stream decompressed, every expanded byte spent from the budget."""
    return capped(gzip.GzipFile(fileobj=stream), name, budget)


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")


def zip_member_count(file: str | Path | BinaryIO, name: str, max_members: int) -> int:
    """Read the member count from the zip's end record, before anything parses the directory.

    Refuses a zip with more than `max_members` members (a directory of a million empty entries
    costs gigabytes to parse), and a zip whose directory does not end where the end record
    says: a truncated archive, or one with data before it. (A truncated zip that holds a stored
    inner zip otherwise reads as that inner zip.) `file` is a path or a seekable binary file.
    """
    if isinstance(file, str | Path):
        with open(file, "rb") as handle:
            return zip_member_count(handle, name, max_members)
    handle = file
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
    handle.seek(0)
    if total > max_members:
        raise InputRejected(f"archive {name} has more than {max_members} members", code="too_many_members")
    if cd_offset + cd_size != end_record:
        raise UnusableInput(f"cannot read archive {name}: it is truncated or has data before it")
    return total


@dataclass
class Member:
    """A regular file inside an archive: its name as stored, that name checked (`/` separators), its
    size by the header, and its capped stream."""

    name: str
    path: str
    size: int
    stream: io.BufferedReader


def members(file: str | Path, name: str, kind: str, budget: Budget) -> Iterator[Member]:
    """Every regular file of a zip or tar, in archive order; consume each stream before the next.

    Every member (directories too) is counted and its path checked; a link or device refuses the
    archive. Streams are capped by `budget`. Errors opening or walking the container become
    UnusableInput (code bad_archive); errors while a member's stream is read surface to its reader
    as one of READ_ERRORS.
    """
    try:
        if kind == "zip":
            yield from _zip_members(Path(file), name, budget)
        elif kind == "tar":
            yield from _tar_members(Path(file), name, budget)
        else:
            raise ValueError(f"not an archive kind: {kind}")
    except UnusableInput:
        raise
    except READ_ERRORS as exc:
        raise unreadable(name, exc) from None


def _zip_members(path: Path, name: str, budget: Budget) -> Iterator[Member]:
    zip_member_count(path, name, budget.limits.max_members)
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            member = budget.member(info.filename)
            mode = (info.external_attr >> 16) & 0o170000
            if mode and mode not in (_REGULAR, _DIRECTORY):
                raise _link(info.filename)
            if info.is_dir():
                continue
            with archive.open(info) as raw:
                yield Member(info.filename, member, info.file_size, capped(raw, f"{name}/{info.filename}", budget))


def _tar_members(path: Path, name: str, budget: Budget) -> Iterator[Member]:
    with open(path, "rb") as handle, tarfile.open(fileobj=handle, mode="r|*") as archive:
        for info in archive:
            member = budget.member(info.name)
            if info.issym() or info.islnk() or info.isdev():  # isdev: character, block and FIFO
                raise _link(info.name)
            if not info.isfile():
                continue
            if info.size > budget.limits.max_member_bytes:
                raise InputRejected(f"archive member {info.name!r} is larger than {budget.limits.max_member_bytes} "
                                    "bytes", code="archive_bomb")
            stream = archive.extractfile(info)
            if stream is not None:
                yield Member(info.name, member, info.size, capped(stream, f"{name}/{info.name}", budget))


def member_names(file: BinaryIO, name: str, kind: str, limit: int, max_members: int | None = None) -> list[str]:
    """The names of the first `limit` regular files of a stored zip or tar, as the archive spells them.

    For showing and picking only (nothing is extracted); a zip's count is still read from its end
    record first, so a directory of millions of entries is refused before it is parsed.
    """
    max_members = Limits().max_members if max_members is None else max_members
    try:
        if kind == "zip":
            zip_member_count(file, name, max_members)
            with zipfile.ZipFile(file) as archive:
                return [info.filename for info in archive.infolist() if not info.is_dir()][:limit]
        if kind == "tar":
            names = []
            with tarfile.open(fileobj=file, mode="r|*") as archive:
                for info in archive:
                    if info.isfile():
                        names.append(info.name)
                        if len(names) >= limit:
                            break
            return names
    except UnusableInput:
        raise
    except READ_ERRORS as exc:
        raise unreadable(name, exc) from None
    return []


@contextmanager
def open_member(file: BinaryIO, kind: str, member: str) -> Iterator[BinaryIO]:
    """One regular file of a stored zip or tar by name (KeyError when there is none), `.gz` members
    decompressed. `file` is seekable; nothing is extracted to disk."""
    if kind == "zip":
        archive = zipfile.ZipFile(file)
        binary = archive.open(member)
    elif kind == "tar":
        archive = tarfile.open(fileobj=file, mode="r:*")  # seekable: the text reader above it seeks
        info = archive.getmember(member)
        if not info.isfile():
            archive.close()
            raise KeyError(member)
        binary = archive.extractfile(info)
    else:
        raise KeyError(member)
    try:
        yield gzip.GzipFile(fileobj=binary) if member.lower().endswith(".gz") else binary
    finally:
        archive.close()
