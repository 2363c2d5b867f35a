"""Archives in an upload: sniffing the container, and safe, capped extraction of text members.

Every member is counted and every expanded byte budgeted while streaming (defence in depth
behind triage.inspect_upload); a zip's member count comes from its end record before the
directory is parsed. Empty and binary members are skipped with a note, not refused.
"""
from __future__ import annotations

import gzip
import io
import re
import tarfile
import zipfile
import zlib
from pathlib import Path

from jobs.textfiles import SAMPLE_BYTES, binary_reason
from triage.sources import zip_member_count

READ_SIZE = 1024 * 1024
SNIFF_BYTES = 8192
_DRIVE = re.compile(r"^[A-Za-z]:")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ARCHIVE_ERRORS = (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, tarfile.TarError)


def _is_tar_header(block: bytes) -> bool:
    return len(block) >= 262 and block[257:262] == b"ustar"


def container_kind(path: Path, name: str) -> str:
    """plain | gz | zip | tar | binary, by magic bytes first (uploads may be misnamed)."""
    from jobs.textfiles import sample_of

    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
        handle.seek(0)
        sample = sample_of(handle, path.stat().st_size)
    tar_named = name.lower().endswith(TAR_SUFFIXES)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        if tar_named:
            return "tar"
        try:
            with gzip.open(path, "rb") as inner:
                return "tar" if _is_tar_header(inner.read(512)) else "gz"
        except ARCHIVE_ERRORS:
            return "gz"  # corrupt: inspect_upload says why
    if head.startswith((b"BZh", b"\xfd7zXZ\x00")):
        return "tar" if tar_named else "binary"
    if _is_tar_header(head[:512]):
        return "tar"
    return "binary" if binary_reason(sample, name) else "plain"


def _rejected(message: str, code: str, field: str):
    from jobs.uploads import UploadRejected

    return UploadRejected(message, code=code, field=field)


class Budget:
    """Counts expanded bytes and members while extracting."""

    def __init__(self, limits, compressed: int, name: str, field: str, spent: int = 0):
        self.limits, self.compressed, self.name, self.field = limits, max(compressed, 1), name, field
        self.expanded = self.members = 0
        self.spent = spent
        self.ratio_floor = getattr(limits, "ratio_floor_bytes", 10 * 1024**2)

    def spend(self, count: int) -> None:
        self.expanded += count
        over_ratio = self.expanded > self.ratio_floor and self.expanded / self.compressed > self.limits.max_ratio
        if self.spent + self.expanded > self.limits.max_total_bytes or over_ratio:
            raise _rejected(f"{self.name} expands too much (possible archive bomb).", "archive_bomb", self.field)

    def member(self, raw_name: str) -> str:
        """Count a member and return its safe relative name ('' for entries to skip)."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise _rejected(f"{self.name} has more than {self.limits.max_members} members.",
                            "too_many_members", self.field)
        clean = raw_name.replace("\\", "/")
        parts = clean.split("/")
        if clean.startswith("/") or _DRIVE.match(clean) or ".." in parts:
            raise _rejected(f"{self.name}: unsafe member path {raw_name!r}.", "path_traversal", self.field)
        parts = [part for part in parts if part not in ("", ".")]
        if not parts or "__MACOSX" in parts or parts[-1] == ".DS_Store" or parts[-1].startswith("._"):
            return ""
        return "/".join(parts)[-255:]

    def link(self, raw_name: str):
        return _rejected(f"{self.name}: member {raw_name!r} is a link or device.", "path_traversal", self.field)


class Capped(io.RawIOBase):
    def __init__(self, raw, budget: Budget):
        self.raw, self.budget = raw, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(min(len(buffer), READ_SIZE))
        self.budget.spend(len(data))
        buffer[: len(data)] = data
        return len(data)


def text_stream(raw, name: str, budget: Budget, notes: list | None):
    """The member as a buffered stream, .gz members decompressed; None (with a note) when empty or binary."""
    stream = io.BufferedReader(Capped(raw, budget), READ_SIZE)
    if stream.peek(2)[:2] == b"\x1f\x8b":
        stream = io.BufferedReader(Capped(gzip.GzipFile(fileobj=stream), budget), READ_SIZE)
        name = name[:-3] if name.lower().endswith(".gz") else name
    sample = stream.peek(SAMPLE_BYTES)[:SAMPLE_BYTES]
    if not sample:
        _note(notes, name, "empty_file", f"{name} is empty; it was ignored.")
        return name, None
    reason = binary_reason(sample, name)
    if reason:
        _note(notes, name, "binary_file", reason.replace(" file, not a log", " member, not a log")
              + " It was ignored.")
        return name, None
    return name, stream


def _note(notes: list | None, name: str, code: str, message: str) -> None:
    if notes is not None:
        from jobs.uploads import UploadNote

        notes.append(UploadNote(file=name, code=code, message=message))


def open_members(path: Path, name: str, container: str, limits, field: str, spent: int = 0,
                 notes: list | None = None):
    """Yield (relative name, stream) for every text member; consume each before the next.

    `spent` counts the bytes the upload's earlier files already expanded to: the expanded total of
    the whole upload stays under limits.max_total_bytes, not just each archive's. Empty and binary
    members are skipped and described in `notes`.
    """
    budget = Budget(limits, path.stat().st_size, name, field, spent)
    try:
        if container == "gz":
            inner = name[:-3] if name.lower().endswith(".gz") else name + ".log"
            with gzip.open(path, "rb") as raw:
                inner, stream = text_stream(raw, inner, budget, None)
                if stream is None:
                    raise _rejected(f"{name} holds an empty or binary file, not a log.", "binary_file", field)
                yield inner, stream
        elif container == "zip":
            try:
                zip_member_count(path, name, limits.max_members)
            except Exception as exc:  # InputRejected (too many) or UnusableInput (truncated)
                code = "too_many_members" if "more than" in str(exc) else "bad_archive"
                raise _rejected(str(exc), code, field) from None
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    member = budget.member(info.filename)
                    mode = (info.external_attr >> 16) & 0o170000
                    if mode and mode not in (0o100000, 0o040000):
                        raise budget.link(info.filename)
                    if not member or info.is_dir():
                        continue
                    if info.file_size == 0:
                        _note(notes, member, "empty_file", f"{member} is empty; it was ignored.")
                        continue
                    with archive.open(info) as raw:
                        member, stream = text_stream(raw, member, budget, notes)
                        if stream is not None:
                            yield member, stream
        else:
            with open(path, "rb") as handle, tarfile.open(fileobj=handle, mode="r|*") as archive:
                for info in archive:
                    member = budget.member(info.name)
                    if info.issym() or info.islnk() or info.isdev():
                        raise budget.link(info.name)
                    if not member or not info.isfile():
                        continue
                    if info.size == 0:
                        _note(notes, member, "empty_file", f"{member} is empty; it was ignored.")
                        continue
                    raw = archive.extractfile(info)
                    member, stream = text_stream(raw, member, budget, notes)
                    if stream is not None:
                        yield member, stream
    except ARCHIVE_ERRORS as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _rejected(f"cannot read {name}: {reason}", "bad_archive", field) from None
