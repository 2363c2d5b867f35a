"""Archives in an upload: sniffing the container, and the text members it holds.

The members are read by the engine's one archive reader (triage.archives): every member is
counted and every expanded byte budgeted while streaming (defence in depth behind
triage.inspect_upload); a zip's member count comes from its end record before the directory is
parsed. What is left here is upload policy: macOS clutter is dropped, .gz members are
decompressed, and empty and binary members are skipped with a note, not refused.
"""
from __future__ import annotations

import gzip
from pathlib import Path

from jobs.textfiles import SAMPLE_BYTES, binary_reason
from triage.archives import (
    READ_ERRORS,
    TAR_SUFFIXES,
    Budget,
    capped,
    first_line,
    gunzip,
    gz_inner_name,
    members,
)
from triage.errors import UnusableInput

SNIFF_BYTES = 8192


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
        except READ_ERRORS:
            return "gz"  # corrupt: inspect_upload says why
    if head.startswith((b"BZh", b"\xfd7zXZ\x00")):
        return "tar" if tar_named else "binary"
    if _is_tar_header(head[:512]):
        return "tar"
    return "binary" if binary_reason(sample, name) else "plain"


def _rejected(message: str, code: str, field: str):
    from jobs.uploads import UploadRejected

    return UploadRejected(message, code=code, field=field)


def kept_name(path: str) -> str:
    """A member's relative name as stored ('' for what macOS adds to archives: __MACOSX, .DS_Store, ._*)."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or "__MACOSX" in parts or parts[-1] == ".DS_Store" or parts[-1].startswith("._"):
        return ""
    return "/".join(parts)[-255:]


def text_stream(stream, name: str, budget: Budget, notes: list | None):
    """The member's (capped) stream, .gz members decompressed; None (with a note) when empty or binary."""
    if stream.peek(2)[:2] == b"\x1f\x8b":
        stream = gunzip(stream, name, budget)
        name = gz_inner_name(name)
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

    The members come from triage.archives (counts, budgets, traversal, links, truncation); its
    refusals become UploadRejected with their own code. `spent` counts the bytes the upload's
    earlier files already expanded to: the expanded total of the whole upload stays under
    limits.max_total_bytes, not just each archive's. Empty and binary members are skipped and
    described in `notes`.
    """
    budget = Budget(limits, path.stat().st_size, spent)
    try:
        if container == "gz":
            inner = name[:-3] if name.lower().endswith(".gz") else name + ".log"
            with gzip.open(path, "rb") as raw:
                inner, stream = text_stream(capped(raw, inner, budget), inner, budget, None)
                if stream is None:
                    raise _rejected(f"{name} holds an empty or binary file, not a log.", "binary_file", field)
                yield inner, stream
            return
        for member in members(path, name, container, budget):
            relative = kept_name(member.path)
            if not relative:
                continue
            if member.size == 0:
                _note(notes, relative, "empty_file", f"{relative} is empty; it was ignored.")
                continue
            relative, stream = text_stream(member.stream, relative, budget, notes)
            if stream is not None:
                yield relative, stream
    except UnusableInput as exc:  # InputRejected too: each carries its code
        raise _rejected(str(exc), exc.code, field) from None
    except READ_ERRORS as exc:
        raise _rejected(f"cannot read {name}: {first_line(exc)}", "bad_archive", field) from None
