"""A line index per stored log, so the log viewer seeks instead of scanning (issue 15).

A rank-filtered search or page of a 300 MB log used to read the file from its first byte: the
page reader decoded every line before `start`, the search read every block. The index, built
once per artifact by one pass over its bytes, holds:

- the byte offset of every STEP-th line (lines as the page reader counts them: `\\n`, `\\r\\n` and
  a lone `\\r` each end one), so "page at line K" is a seek and at most STEP lines read;
- for every rank, the runs of STEP-line blocks where a line of that rank may be (every prefix
  form `jobs.logfiles.rank_matcher` knows: `[rank3]:`, `[default3]:`, `3: `, `[1,3]<`, `rank 3` in
  the text), so "only rank R" reads only the blocks where rank R printed. The blocks are a
  superset found with cheap patterns; the lines read from them are still kept or dropped by
  rank_matcher itself, so the answer is the scan's, line for line.

A text search reads the blocks it needs in order, at most `byte_budget` bytes, and reports where
it stopped (`SearchResult.next_from`: the first line it did not look at).

Where: one file per artifact under MEDIA_ROOT/logindex/ (the media volume is what the web and
worker containers share), named by the artifact's storage path. It records the file's size,
mtime, inode and a hash of its first and last 64 KiB: a truncated, grown or rewritten file no
longer matches and its index is rebuilt (or, past LAZY_BUILD_MAX_BYTES, the viewer scans as before).

When: the worker builds it after a diagnosis for logs of INDEX_MIN_BYTES or more
(`build_for_incident`); the viewer builds it on first use when it is missing or stale. Smaller
files, archive members and compressed files keep the plain scan in jobs.logfiles.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import struct
import tempfile
import zlib
from array import array
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

VERSION = 1
MAGIC = b"TRIAGE-LOGINDEX\n"
STEP = 64  # a sampled offset every STEP lines; rank runs are kept per block of STEP lines
BUILD_BLOCK = 8 * 1024 * 1024
READ_BLOCK = 8 * 1024 * 1024
MAX_CARRY = 64 * 1024 * 1024  # a "line" longer than this without a line end: not indexed
INDEX_MIN_BYTES = 8 * 1024 * 1024  # smaller logs are scanned as before (a few ms)
LAZY_BUILD_MAX_BYTES = 512 * 1024 * 1024  # the viewer builds a missing index on first use up to this size
MAX_RANKS = 4096  # distinct ranks indexed per file; more: rank filters fall back to the scan
FINGERPRINT_BYTES = 64 * 1024

# Which ranks a block of lines may hold, on the lower-cased bytes: each pattern finds at least the
# numbers triage.ranks.rank_line_pattern(n) would (it adds a few, e.g. "prank 3": never fewer).
_RANK_WORD = re.compile(rb"rank ?(\d{1,9})")  # "[rank3]", "rank 3", "rank3"
_RANK_BRACKET = re.compile(rb"(?:\[default|\[[^\],\n\r]{1,16},)(\d{1,9})\]")  # "[default3]", "[1,3]<"
_RANK_LABEL = re.compile(rb"[\n\r][^\n\r\d]{0,16}(\d{1,9}): ")  # srun --label "3: " after a line end
# The same after a line feed and ASCII spaces: a one-byte literal start keeps it fast. Pieces with a
# lone CR or a line starting with non-ASCII bytes (a Unicode space?) take the wide pattern too.
_RANK_LABEL_ASCII = re.compile(rb"\n[ \t\x0b\x0c\x1c-\x1f]{0,4}(\d{1,9}): ")
_NON_ASCII_LINE_START = re.compile(rb"\n[ \t\x0b\x0c\x1c-\x1f]{0,4}[\x80-\xff]")
_LINE_ENDS = re.compile(rb"(\r\n|\r|\n)")


class Unindexable(Exception):
    """The file cannot be indexed (a line without an end longer than MAX_CARRY)."""


def index_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "logindex"


def _plain_path(artifact, member: str = "") -> str | None:
    """The file on disk when the artifact is plain text in local storage (what uploads store)."""
    name = (getattr(artifact, "original_name", "") or "").lower()
    if member or name.endswith((".gz", ".zip", ".tar", ".tgz", ".bz2", ".xz")):
        return None
    try:
        return artifact.file.path
    except (NotImplementedError, ValueError, AttributeError):
        return None


def index_path(path: str) -> Path:
    return index_root() / (hashlib.sha1(os.path.abspath(path).encode()).hexdigest() + ".idx")


def _identity(path: str, handle) -> dict:
    stat = os.fstat(handle.fileno())
    head = handle.read(FINGERPRINT_BYTES)
    handle.seek(max(0, stat.st_size - FINGERPRINT_BYTES))
    tail = handle.read(FINGERPRINT_BYTES)
    handle.seek(0)
    digest = hashlib.sha1(head + b"\0" + tail + str(stat.st_size).encode()).hexdigest()
    return {"path": os.path.abspath(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "inode": stat.st_ino, "fingerprint": digest}


def _line_ends(block: bytes):
    """(number of line ends in `block`, end_at) where end_at(i) is the offset just past the i-th
    line end (a lone CR ends a line, as in the page reader). Per-line work stays in C."""
    if b"\r" not in block:
        parts = block.split(b"\n")
        parts.pop()
        cumulative = list(accumulate(map(len, parts)))
        return len(cumulative), lambda i: cumulative[i] + i + 1
    pieces = _LINE_ENDS.split(block)
    ends = list(accumulate(map(len, pieces)))[1::2]
    return len(ends), ends.__getitem__


class LineIndex:
    """A loaded index: sampled offsets in memory, per-rank block runs read on demand."""

    def __init__(self, path: str, header: dict, offsets: array, blob_file: Path, blob_start: int):
        self.path, self.header, self.offsets = path, header, offsets
        self.lines, self.step, self.size = header["lines"], header["step"], header["size"]
        self._blob_file, self._blob_start = blob_file, blob_start
        self._ranks: dict[int, array] = {}

    @property
    def ranks_complete(self) -> bool:
        return self.header["ranks_complete"]

    def ranks(self) -> list[int]:
        return sorted(int(rank) for rank in self.header["ranks"])

    def rank_blocks(self, rank: int) -> array:
        """The blocks (of STEP lines, from 0) that may hold lines of `rank`, ascending."""
        rank = int(rank)
        if rank not in self._ranks:
            entry = self.header["ranks"].get(str(rank))
            blocks = array("I")
            if entry:
                position, length, _count = entry
                with open(self._blob_file, "rb") as handle:
                    handle.seek(self._blob_start + position)
                    blocks.frombytes(zlib.decompress(handle.read(length)))
                blocks = array("I", accumulate(blocks))  # stored as deltas
            self._ranks[rank] = blocks
        return self._ranks[rank]

    def block_span(self, first: int, last: int) -> tuple[int, int]:
        """Byte range of sample blocks first..last (inclusive)."""
        end = self.offsets[last + 1] if last + 1 < len(self.offsets) else self.size
        return self.offsets[first], end

    def block_of(self, line: int) -> int:
        return (line - 1) // self.step


def _rank_finders(lowered: bytes) -> list:
    """The patterns worth running on this piece: most logs have no srun labels or mpirun tags."""
    finders = [(_RANK_WORD, 0)]
    if b"[default" in lowered or b"]<" in lowered:
        finders.append((_RANK_BRACKET, 0))
    if _RANK_LABEL_ASCII.search(lowered):
        finders.append((_RANK_LABEL_ASCII, 1))
    if b"\r" in lowered or _NON_ASCII_LINE_START.search(lowered):
        finders.append((_RANK_LABEL, 1))
    return finders


def _ranks_between(finders, lowered: bytes, start: int, end: int) -> set[int]:
    found = set()
    for pattern, back in finders:  # back: the label patterns start on the line end before the line
        found.update(pattern.findall(lowered, start - back, end))
    return {int(digits) for digits in found}


def build(path: str, destination: Path | None = None) -> LineIndex:
    """Read the file once and write its index atomically; return it loaded."""
    destination = destination or index_path(path)
    offsets = array("Q")
    ranks: dict[int, array] = {}
    ranks_complete = True
    lines = 0  # lines completed so far
    with open(path, "rb") as handle:
        identity = _identity(path, handle)
        position, carry = 0, b""  # position: file offset of carry[0]
        while True:
            chunk = handle.read(BUILD_BLOCK)
            block = carry + chunk if carry else chunk
            if not block:
                break
            if chunk:
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    cut = block.rfind(b"\r", 0, len(block) - 1) + 1  # a CR last may start a CRLF
                if cut == 0:
                    if len(block) > MAX_CARRY:
                        raise Unindexable(f"{path}: a line longer than {MAX_CARRY} bytes")
                    carry = block
                    continue
            else:
                cut = len(block)  # the last line, without an end
            block, carry = block[:cut], block[cut:]
            count, end_at = _line_ends(block)
            if not chunk and (not count or end_at(count - 1) < len(block)):
                count += 1  # a last line without its end is a line too
            # blocks of STEP lines that start here: line (0-based) k*STEP starts at a sampled offset
            first_sample = -(-lines // STEP) * STEP
            starts = [(line0 - lines, position + (end_at(line0 - lines - 1) if line0 > lines else 0))
                      for line0 in range(first_sample, lines + count, STEP)]
            if ranks_complete:
                lowered = b"\n" + block.lower()  # a line end before the first line, for _RANK_LABEL
                # the lines before the first sampled start belong to the previous block
                spans = [(len(offsets) - 1, 1)] if first_sample > lines and offsets else []
                spans += [(len(offsets) + n, offset - position + 1) for n, (_, offset) in enumerate(starts)]
                finders = _rank_finders(lowered)
                for n, (number, begin) in enumerate(spans):
                    end = spans[n + 1][1] if n + 1 < len(spans) else len(lowered)
                    for rank in _ranks_between(finders, lowered, begin, end):
                        found = ranks.get(rank)
                        if found is None:
                            if len(ranks) >= MAX_RANKS:
                                ranks_complete = False
                                break
                            found = ranks[rank] = array("I")
                        if not found or found[-1] != number:
                            found.append(number)
                    if not ranks_complete:
                        ranks.clear()
                        break
            offsets.extend(offset for _, offset in starts)
            lines += count
            position += len(block)
            if not chunk:
                break
    header = {**identity, "version": VERSION, "lines": lines, "step": STEP, "ranks_complete": ranks_complete}
    blobs, where = [], 0
    packed = zlib.compress(offsets.tobytes(), 1)
    header["offsets"] = [where, len(packed), len(offsets)]
    blobs.append(packed)
    where += len(packed)
    header["ranks"] = {}
    for rank, blocks in sorted(ranks.items()):
        deltas = array("I", (b - a for a, b in zip([0, *blocks[:-1]], blocks, strict=True)))
        packed = zlib.compress(deltas.tobytes(), 1)
        header["ranks"][str(rank)] = [where, len(packed), len(blocks)]
        blobs.append(packed)
        where += len(packed)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".building-", dir=destination.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", len(encoded)) + encoded)
            for blob in blobs:
                out.write(blob)
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return load(path, destination, check=False)


def load(path: str, source: Path | None = None, *, check: bool = True) -> LineIndex | None:
    """The index of `path` when there is one and it still describes the file; else None."""
    source = source or index_path(path)
    try:
        with open(source, "rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
            blob_start = handle.tell()
            position, size, _count = header["offsets"]
            handle.seek(blob_start + position)
            offsets = array("Q")
            offsets.frombytes(zlib.decompress(handle.read(size)))
        if header.get("version") != VERSION:
            return None
        if check:
            with open(path, "rb") as handle:
                identity = _identity(path, handle)
            if any(header.get(key) != value for key, value in identity.items()):
                return None
    except (OSError, ValueError, KeyError, struct.error, zlib.error):
        return None
    return LineIndex(path, header, offsets, source, blob_start)


def usable(artifact, member: str = "", *, build_missing: bool = True) -> LineIndex | None:
    """The valid index of a plain stored log of INDEX_MIN_BYTES or more, built now when it is
    missing or stale and the file is at most LAZY_BUILD_MAX_BYTES; None: scan the file as before."""
    path = _plain_path(artifact, member)
    if path is None:
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < INDEX_MIN_BYTES:
        return None
    index = load(path)
    if index is None and build_missing and size <= LAZY_BUILD_MAX_BYTES:
        try:
            index = build(path)
        except (OSError, Unindexable) as error:
            logger.warning("no line index for %s: %s", path, error)
            return None
    return index


def build_for_incident(incident_pk: int) -> int:
    """Index the incident's large plain logs (called by the worker after a diagnosis). Never raises:
    the viewer builds what is missing on first use. Returns how many indexes were written."""
    from jobs.models import Artifact

    written = 0
    try:
        for artifact in Artifact.objects.filter(incident_id=incident_pk, kind=Artifact.Kind.LOG,
                                                size__gte=INDEX_MIN_BYTES):
            path = _plain_path(artifact)
            if path is None or load(path) is not None:
                continue
            build(path)
            written += 1
    except Exception as error:  # noqa: BLE001 - also a soft time limit: the diagnosis is saved already
        logger.warning("line index of incident %s stopped: %r", incident_pk, error)
    return written


def sweep_stale() -> int:
    """Remove index files whose log is gone (its incident deleted) or no longer matches them."""
    removed = 0
    root = index_root()
    if not root.is_dir():
        return 0
    for entry in root.iterdir():
        if not entry.name.endswith(".idx"):
            if entry.name.startswith(".building-"):
                try:
                    if entry.stat().st_mtime < _now() - 3600:
                        entry.unlink(missing_ok=True)
                        removed += 1
                except OSError:
                    pass
            continue
        try:
            with open(entry, "rb") as handle:
                handle.read(len(MAGIC))
                (length,) = struct.unpack("<Q", handle.read(8))
                path = json.loads(handle.read(length))["path"]
        except (OSError, ValueError, KeyError, struct.error):
            path = None
        if path is None or not os.path.exists(path) or load(path, entry) is None:
            entry.unlink(missing_ok=True)
            removed += 1
    return removed


def _now() -> float:
    import time

    return time.time()


# -- reading -------------------------------------------------------------------------------------


def _split(data: bytes) -> list[bytes]:
    """Lines of `data` (starting at a line start) without their ends, as the page reader splits them."""
    if b"\r" in data:
        pieces = _LINE_ENDS.split(data)
        lines = pieces[0::2]
    else:
        lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace") + "\n"


def _blocks_lines(handle, index: LineIndex, first: int, last: int):
    """(number, raw line) for the lines of sample blocks first..last, reading in bounded pieces."""
    block = first
    while block <= last:
        end_block = block
        start, end = index.block_span(block, block)
        while end_block < last and end - start < READ_BLOCK:
            end_block += 1
            end = index.block_span(end_block, end_block)[1]
        handle.seek(start)
        data = handle.read(end - start)
        for offset, raw in enumerate(_split(data)):
            yield block * index.step + 1 + offset, raw
        block = end_block + 1


def read_page(index: LineIndex, *, start: int, rank, highlight, query: str, size: int, page):
    """Fill `page` (a jobs.logfiles.LogPage) through the index; same lines as the page reader's scan."""
    from jobs.logfiles import _clip, rank_matcher

    needle = query.lower()

    def row(number, raw):
        text = _decode(raw)
        return number, _clip(text), bool(needle) and needle in text.lower() or number == highlight

    with open(index.path, "rb") as handle:
        if rank is None:
            if start > index.lines:
                return page
            wanted_last = min(index.lines, start + size)  # one more than the page: is there a next?
            for number, raw in _blocks_lines(handle, index, index.block_of(start), index.block_of(wanted_last)):
                if number < start:
                    continue
                if len(page.lines) >= size:
                    page.has_next, page.next_start = True, number
                    break
                page.lines.append(row(number, raw))
            return page
        keep = rank_matcher(rank)
        blocks = index.rank_blocks(rank)
        blocks = blocks[bisect_left(blocks, index.block_of(start)):]
        for first, last in _runs(blocks):
            for number, raw in _blocks_lines(handle, index, first, last):
                if number < start:
                    continue
                text = _decode(raw)
                if not keep(text):
                    continue
                if len(page.lines) >= size:
                    page.has_next, page.next_start = True, number
                    return page
                page.lines.append((number, _clip(text), bool(needle) and needle in text.lower()
                                   or number == highlight))
    return page


def _runs(blocks):
    """Consecutive block numbers grouped: [1, 2, 3, 7, 8] -> (1, 3), (7, 8)."""
    run_start = previous = None
    for block in blocks:
        if previous is not None and block == previous + 1:
            previous = block
            continue
        if run_start is not None:
            yield run_start, previous
        run_start = previous = block
    if run_start is not None:
        yield run_start, previous


def search(index: LineIndex, needle: bytes, *, rank, from_line: int, limit: int, byte_budget: int, result):
    """Fill `result` (a jobs.logfiles.SearchResult): lines from from_line on holding `needle`
    (lower-case ASCII, no line end), of `rank` when given, reading only the blocks that can hold them.

    Stops after `limit` matches or `byte_budget` bytes read; then result.complete is False and
    result.next_from the first line not looked at (where a "more" link continues)."""
    from_line = max(1, from_line)
    if from_line > index.lines:
        return result
    keep = None
    if rank is None:
        blocks = range(index.block_of(from_line), index.block_of(index.lines) + 1)
    else:
        from jobs.logfiles import rank_matcher

        blocks = index.rank_blocks(rank)
        blocks = blocks[bisect_left(blocks, index.block_of(from_line)):]
        if not blocks:
            return result
        keep = rank_matcher(rank)

    read = 0
    with open(index.path, "rb") as handle:
        for first, last in _runs(blocks):
            block = first
            while block <= last:
                end_block = block
                start, end = index.block_span(block, block)
                while end_block < last and index.block_span(block, end_block + 1)[1] - start <= READ_BLOCK:
                    end_block += 1
                    end = index.block_span(block, end_block)[1]
                first_line = block * index.step + 1
                handle.seek(start)
                if read + (end - start) > byte_budget:  # the last piece: whole lines up to the budget
                    data = handle.read(max(0, byte_budget - read))
                    cut = data.rfind(b"\n") + 1 or data.rfind(b"\r", 0, max(0, len(data) - 1)) + 1
                    data = data[:cut]
                    if not _scan(data, first_line, needle, keep, from_line, limit, result):
                        result.complete = False
                        result.next_from = max(from_line, first_line + _line_ends(data)[0])
                    return result
                data = handle.read(end - start)
                read += len(data)
                if _scan(data, first_line, needle, keep, from_line, limit, result):
                    return result
                block = end_block + 1
    return result


def _scan(data: bytes, first_line: int, needle: bytes, keep, from_line: int, limit: int, result) -> bool:
    """Matches in one piece of whole lines; True when the match limit stopped the search."""
    from jobs.logfiles import _clip

    lowered = data.lower()
    has_cr = b"\r" in data
    counted, line, position = 0, first_line, 0
    while True:
        hit = lowered.find(needle, position)
        if hit < 0:
            return False
        if has_cr:
            begin = max(data.rfind(b"\n", 0, hit), data.rfind(b"\r", 0, hit)) + 1
            ends = [end for end in (data.find(b"\n", hit), data.find(b"\r", hit)) if end >= 0]
            end = min(ends) if ends else len(data)
            line += (data.count(b"\n", counted, begin) + data.count(b"\r", counted, begin)
                     - data.count(b"\r\n", counted, begin))
        else:
            begin = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            end = len(data) if end < 0 else end
            line += data.count(b"\n", counted, begin)
        counted, position = begin, end + 1
        if line < from_line:
            continue
        text = _decode(data[begin:end])
        if keep is not None and not keep(text):
            continue
        if len(result.matches) >= limit:
            result.complete, result.next_from = False, line
            return True
        result.matches.append((line, _clip(text)))
