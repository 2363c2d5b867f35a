"""Log bytes in, stored text out: binary sniffing by share of non-text bytes, and masked copying.

A log with a few NUL bytes or stray binary bytes (a crash mid-write, a NFS hole, a progress bar
in another encoding) is still a log: those bytes are kept as U+FFFD. Only a file where a large
share of the sampled bytes is not text (an image, a checkpoint, a core dump) is binary.
"""
from __future__ import annotations

import hashlib

from triage.secrets import Masker, safe_cut

MASK_BLOCK = 1024 * 1024  # bytes of whole lines masked at once
MAX_LINE_CARRY = 16 * MASK_BLOCK  # a line longer than this without a safe cut is cut anyway
SAMPLE_BYTES = 64 * 1024
BINARY_SHARE = 0.30  # more than this share of non-text bytes in the sample: a binary file

# Control characters a log may hold: tab, line feed, form feed, carriage return, backspace, escape.
_TEXT_CONTROLS = b"\t\n\x0c\r\x08\x1b"
_TEXT_ASCII = bytes(range(0x20, 0x7F)) + _TEXT_CONTROLS


def non_text_share(sample: bytes) -> float:
    """Share of bytes in `sample` that no text log holds: NUL and other controls, invalid UTF-8."""
    if not sample:
        return 0.0
    controls = len(sample.translate(None, _TEXT_ASCII + bytes(range(0x80, 0x100))))
    high = len(sample) - len(sample.translate(None, bytes(range(0x80, 0x100))))
    invalid = 0
    if high:
        invalid = sample.decode("utf-8", errors="replace").count("\ufffd")
    return (controls + invalid) / len(sample)


def sample_of(handle, size: int | None = None) -> bytes:
    """The head, middle and tail of a seekable file (a log with a NUL hole at its start is still text)."""
    head = handle.read(SAMPLE_BYTES)
    if size is None or size <= 3 * SAMPLE_BYTES:
        return head + handle.read(2 * SAMPLE_BYTES)
    handle.seek(size // 2)
    middle = handle.read(SAMPLE_BYTES)
    handle.seek(size - SAMPLE_BYTES)
    return head + middle + handle.read(SAMPLE_BYTES)


def binary_reason(sample: bytes, name: str) -> str | None:
    """A user-facing reason why `name` is binary, or None for text."""
    share = non_text_share(sample)
    if share <= BINARY_SHARE:
        return None
    return (f"{name} is a binary file, not a log, archive or text file "
            f"({share:.0%} of its sampled bytes are not text).")


def write_masked(source, handle) -> tuple[int, str]:
    """Copy a binary stream as UTF-8 text with secrets masked; return (size, sha256).

    Reads blocks of whole lines, so memory stays bounded and the masker scans each block once.
    A line longer than a block is cut at a space where no secret can straddle the cut
    (triage.secrets.safe_cut), so a token crossing any byte offset of a long line is still masked.
    """
    writer = MaskingWriter(handle)
    while True:
        chunk = source.read(MASK_BLOCK)
        writer.feed(chunk)
        if not chunk:
            return writer.size, writer.hasher.hexdigest()


class MaskingWriter:
    """write_masked as a sink: `feed` it what each read of the source returned, b"" at the end.

    The upload handler (jobs.uploadhandlers) feeds it while the request body is parsed, in exact
    MASK_BLOCK pieces, so the masked copy is written in the same pass as the upload (byte for byte
    what write_masked makes of the uploaded file) instead of being read back from disk."""

    def __init__(self, handle):
        self.handle, self.hasher, self.size, self.carry = handle, hashlib.sha256(), 0, b""
        self.masker = Masker()

    def feed(self, chunk: bytes) -> None:
        block = self.carry + chunk if self.carry else chunk
        if not block:
            return
        cut = len(block) if not chunk else block.rfind(b"\n") + 1
        if cut == 0:  # no line end in the block: one very long line
            cut = safe_cut(block)
            if cut == 0:
                if len(block) < MAX_LINE_CARRY:
                    self.carry = block
                    return
                cut = _char_boundary(block, len(block) - 1)
        self.carry = block[cut:]
        data = self.masker.feed_bytes(block[:cut])
        self.hasher.update(data)
        self.handle.write(data)
        self.size += len(data)


def _char_boundary(block: bytes, index: int) -> int:
    """The nearest index at or before `index` that does not split a UTF-8 sequence."""
    while index > 0 and block[index] & 0xC0 == 0x80:
        index -= 1
    return max(index, 1)
