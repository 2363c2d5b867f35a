"""Reading stored log artifacts a page at a time.

Logs can be gigabytes: everything here streams lines and stops early, so a page
never holds more than one window of a file. Plain text, .gz and members of
.zip/.tar(.gz) archives are readable (archives through triage.archives, the engine's one
archive reader); anything else is shown as text anyway.
"""
from __future__ import annotations

import gzip
import io
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from jobs import logindex
from triage import archives
from triage.archives import READ_ERRORS
from triage.errors import UnusableInput
from triage.ranks import rank_line_pattern

PAGE_LINES = 200
MAX_LINE_CHARS = 4000
SEARCH_MAX_MATCHES = 200
# A search or a context lookup gives up after this many bytes, so a request stays bounded.
SCAN_BYTE_BUDGET = 512 * 1024 * 1024
CONTEXT_BYTE_BUDGET = 32 * 1024 * 1024


def _kind(artifact) -> str:
    return archives.kind_of(artifact.original_name or "")


def is_archive(artifact) -> bool:
    return _kind(artifact) in ("zip", "tar")


def archive_members(artifact, limit: int = 2000, max_members: int | None = None) -> list[str]:
    """Names of the regular files inside an archive artifact (empty for other files, unreadable ones
    and zips of more than `max_members` members: triage.Limits' by default)."""
    kind = _kind(artifact)
    if kind not in ("zip", "tar"):
        return []
    try:
        with artifact.file.open("rb") as raw:
            return archives.member_names(raw, artifact.original_name, kind, limit, max_members)
    except (UnusableInput, *READ_ERRORS):
        return []


@contextmanager
def open_lines(artifact, member: str = ""):
    """Yield a text stream of the artifact (or of one archive member), decoding leniently."""
    kind = _kind(artifact)
    with artifact.file.open("rb") as raw, ExitStack() as opened:
        if member and kind in ("zip", "tar"):
            binary = opened.enter_context(archives.open_member(raw, kind, member))
        elif kind == "gz":
            binary = gzip.GzipFile(fileobj=raw)
        else:
            binary = raw
        yield io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None)


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " …[cut]"




def _line_index(artifact, member: str, rank, build: bool = True):
    """The artifact's line index (jobs.logindex) when it can answer; None: scan as before."""
    index = logindex.usable(artifact, member, build_missing=build)
    if index is None or (rank is not None and not index.ranks_complete):
        return None
    return index


def rank_matcher(rank):
    """A predicate for lines that a given rank printed, by the usual launcher prefixes."""
    if rank is None:
        return None
    pattern = rank_line_pattern(int(rank))
    return lambda line: bool(pattern.search(line))


@dataclass
class LogPage:
    lines: list = field(default_factory=list)  # [(number, text, is_match)]
    start: int = 1
    has_previous: bool = False
    has_next: bool = False
    next_start: int | None = None
    previous_start: int | None = None
    truncated: bool = False
    error: str = ""


def read_page(artifact, *, start: int = 1, member: str = "", rank=None, highlight: int | None = None,
              query: str = "", size: int = PAGE_LINES) -> LogPage:
    """Lines [start, start+size) of the file; with rank, only that rank's lines (numbers stay the file's)."""
    start = max(1, start)
    keep = rank_matcher(rank)
    needle = query.lower()
    page = LogPage(start=start, has_previous=start > 1, previous_start=max(1, start - size) if start > 1 else None)
    index = _line_index(artifact, member, rank, build=rank is not None or start > 4 * 512)
    if index is not None:  # a seek instead of reading every line before `start` (jobs.logindex)
        try:
            return logindex.read_page(index, start=start, rank=rank, highlight=highlight, query=query,
                                      size=size, page=page)
        except OSError as error:
            page.error = f"This file cannot be read: {error.__class__.__name__}"
            return page
    try:
        with open_lines(artifact, member) as stream:
            for number, text in enumerate(stream, start=1):
                if number < start:
                    continue
                if keep and not keep(text):
                    continue
                if len(page.lines) >= size:
                    page.has_next = True
                    page.next_start = number
                    break
                page.lines.append((number, _clip(text), bool(needle) and needle in text.lower()
                                   or number == highlight))
    except (KeyError, UnusableInput, *READ_ERRORS) as error:
        page.error = f"This file cannot be read: {error.__class__.__name__}"
    return page


@dataclass
class SearchResult:
    matches: list = field(default_factory=list)  # [(number, text)]
    complete: bool = True
    next_from: int | None = None
    error: str = ""


SCAN_BLOCK = 8 * 1024 * 1024


def _local_plain_path(artifact, member: str):
    """The file on disk when the artifact is plain text in local storage (what uploads store)."""
    if member or _kind(artifact) != "plain":
        return None
    try:
        return artifact.file.path
    except (NotImplementedError, ValueError):
        return None


class _CarriageReturns(Exception):
    pass


def _fast_search(path: str, needle: bytes, keep, from_line: int, limit: int, byte_budget: int) -> SearchResult:
    """search() over a plain file in 8 MiB blocks: the needle is found by bytes.find over the
    lower-cased block (C speed) and line numbers by counting line ends, instead of decoding and
    lower-casing the file line by line (a rank-filtered search of 300 MB took seconds)."""
    result = SearchResult()
    line = 1  # number of the first line of the current block
    read = 0
    carry = b""
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(SCAN_BLOCK)
            block = carry + chunk
            if not block:
                break
            cut = block.rfind(b"\n") + 1 if chunk else len(block)
            if cut == 0:
                cut = len(block)
            block, carry = block[:cut], block[cut:]
            if b"\r" in block:  # a lone CR is a line end to the page reader: let it count the lines
                raise _CarriageReturns
            start = 0
            if line < from_line:  # skip whole lines before from_line
                lines_here = block.count(b"\n")
                if line + lines_here <= from_line and chunk:
                    line += lines_here
                    continue
                while line < from_line:
                    found = block.find(b"\n", start)
                    if found < 0:
                        return result
                    start = found + 1
                    line += 1
            if read + (len(block) - start) > byte_budget:
                stop = start + (byte_budget - read)
                stop = block.rfind(b"\n", start, max(stop, start)) + 1 or start
                lowered, budget_line = block[start:stop].lower(), line + block.count(b"\n", start, stop)
                block, carry, chunk = block[:stop], b"", b""
                result.complete, result.next_from = False, budget_line
            else:
                lowered = block[start:].lower()
            read += len(block) - start
            counted, at_line, position = start, line, 0
            while True:
                hit = lowered.find(needle, position)
                if hit < 0:
                    break
                begin = block.rfind(b"\n", 0, start + hit) + 1
                end = block.find(b"\n", start + hit)
                end = len(block) if end < 0 else end
                at_line += block.count(b"\n", counted, begin)
                counted = begin
                position = end - start + 1
                text = block[begin:end].decode("utf-8", errors="replace")
                if keep and not keep(text):
                    continue
                if len(result.matches) >= limit:
                    result.complete, result.next_from = False, at_line
                    return result
                result.matches.append((at_line, _clip(text)))
            if not result.complete:
                return result
            line += block.count(b"\n", start)
            if not chunk:
                break
    return result


def search(artifact, query: str, *, member: str = "", rank=None, from_line: int = 1,
           limit: int = SEARCH_MAX_MATCHES, byte_budget: int = SCAN_BYTE_BUDGET) -> SearchResult:
    """Case-insensitive substring search, streaming, bounded by matches and bytes read."""
    result = SearchResult()
    needle = query.lower()
    keep = rank_matcher(rank)
    read = 0
    if not needle:
        return result
    index = _line_index(artifact, member, rank) if needle.isascii() and not {"\n", "\r"} & set(needle) else None
    if index is not None:  # only the blocks that can hold a match, bounded (jobs.logindex)
        try:
            return logindex.search(index, needle.encode(), rank=rank, from_line=from_line, limit=limit,
                                   byte_budget=byte_budget, result=result)
        except OSError as error:
            result.error = f"This file cannot be read: {error.__class__.__name__}"
            return result
    path = _local_plain_path(artifact, member)
    if path is not None and needle.isascii() and "\n" not in needle:
        try:
            return _fast_search(path, needle.encode(), keep, max(1, from_line), limit, byte_budget)
        except _CarriageReturns:
            pass  # the line-by-line reader below
        except OSError as error:
            result.error = f"This file cannot be read: {error.__class__.__name__}"
            return result
    try:
        with open_lines(artifact, member) as stream:
            for number, text in enumerate(stream, start=1):
                if number < from_line:
                    continue
                read += len(text)
                if read > byte_budget:
                    result.complete = False
                    result.next_from = number
                    break
                if keep and not keep(text):
                    continue
                if needle in text.lower():
                    if len(result.matches) >= limit:
                        result.complete = False
                        result.next_from = number
                        break
                    result.matches.append((number, _clip(text)))
    except (KeyError, UnusableInput, *READ_ERRORS) as error:
        result.error = f"This file cannot be read: {error.__class__.__name__}"
    return result


def context_lines(artifact, line: int, *, member: str = "", radius: int = 3,
                  byte_budget: int = CONTEXT_BYTE_BUDGET) -> list | None:
    """[(number, text)] around a line, or None when the line is out of reach of the budget."""
    return contexts(artifact, [line], member=member, radius=radius, byte_budget=byte_budget).get(line)


def contexts(artifact, lines, *, member: str = "", radius: int = 3,
             byte_budget: int = CONTEXT_BYTE_BUDGET) -> dict:
    """{line: [(number, text)]} around each wanted line, in ONE pass over the file, bounded by bytes read."""
    wanted = sorted({line for line in lines if line and line > 0})
    if not wanted:
        return {}
    windows = {line: [] for line in wanted}
    last_needed = wanted[-1] + radius
    read = 0
    try:
        with open_lines(artifact, member) as stream:
            for number, text in enumerate(stream, start=1):
                read += len(text)
                if number > last_needed or read > byte_budget:
                    break
                for line in wanted:
                    if line - radius <= number <= line + radius:
                        windows[line].append((number, _clip(text)))
    except (KeyError, UnusableInput, *READ_ERRORS):
        return {}
    # A window is only shown when it reached its own line (the budget may have cut it short).
    return {line: window for line, window in windows.items() if any(n == line for n, _ in window)}


def find_artifact(artifacts, source: str):
    """The artifact (and archive member) an evidence `source` names: exact, then by path suffix."""
    if not source:
        return None, ""
    source_path = PurePosixPath(str(source).replace("\\", "/"))
    logs = [a for a in artifacts if a.kind == "log"] or list(artifacts)
    for artifact in logs:
        if artifact.original_name == str(source):
            return artifact, ""
    # A path suffix on either side ("run-logs/attempt_0/3/stderr.log" vs "attempt_0/3/stderr.log"), then
    # the bare file name, but only when one artifact has it: four ranks' "stderr.log" are four files.
    source_text = str(source_path)
    for artifact in logs:
        if source_text.endswith("/" + str(artifact.original_name).replace("\\", "/")):
            return artifact, ""
    longer = [a for a in logs if str(a.original_name).replace("\\", "/").endswith("/" + source_text)]
    if len(longer) == 1:
        return longer[0], ""
    same_name = [a for a in logs if PurePosixPath(str(a.original_name).replace("\\", "/")).name == source_path.name]
    if len(same_name) == 1:
        return same_name[0], ""
    # "archive.zip/logs/0/stdout.log" or "archive.zip:logs/..." or a bare member path.
    for artifact in logs:
        if not is_archive(artifact):
            continue
        text = str(source_path)
        for separator in ("/", ":", "!"):
            prefix = artifact.original_name + separator
            if text.startswith(prefix):
                return artifact, text[len(prefix):]
    archives = [a for a in logs if is_archive(a)]
    if len(archives) == 1 and len(logs) == 1:
        return archives[0], str(source_path)
    return None, ""
