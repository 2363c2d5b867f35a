"""Reading stored log artifacts a page at a time.

Logs can be gigabytes: everything here streams lines and stops early, so a page
never holds more than one window of a file. Plain text, .gz and members of
.zip/.tar(.gz) archives are readable; anything else is shown as text anyway.
"""
from __future__ import annotations

import gzip
import io
import re
import tarfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath

PAGE_LINES = 200
MAX_LINE_CHARS = 4000
SEARCH_MAX_MATCHES = 200
# A search or a context lookup gives up after this many bytes, so a request stays bounded.
SCAN_BYTE_BUDGET = 512 * 1024 * 1024
CONTEXT_BYTE_BUDGET = 32 * 1024 * 1024


def _lower_name(artifact) -> str:
    return (artifact.original_name or "").lower()


def is_archive(artifact) -> bool:
    name = _lower_name(artifact)
    return name.endswith((".zip", ".tar", ".tar.gz", ".tgz"))


def archive_members(artifact, limit: int = 2000) -> list[str]:
    """Names of the regular files inside an archive artifact (empty for other files)."""
    name = _lower_name(artifact)
    try:
        with artifact.file.open("rb") as raw:
            if name.endswith(".zip"):
                with zipfile.ZipFile(raw) as archive:
                    return [i.filename for i in archive.infolist() if not i.is_dir()][:limit]
            if name.endswith((".tar", ".tar.gz", ".tgz")):
                with tarfile.open(fileobj=raw, mode="r:*") as archive:
                    members = []
                    for info in archive:
                        if info.isfile():
                            members.append(info.name)
                            if len(members) >= limit:
                                break
                    return members
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError):
        return []
    return []


@contextmanager
def open_lines(artifact, member: str = ""):
    """Yield a text stream of the artifact (or of one archive member), decoding leniently."""
    name = _lower_name(artifact)
    raw = artifact.file.open("rb")
    try:
        if member and name.endswith(".zip"):
            archive = zipfile.ZipFile(raw)
            binary = archive.open(member)
        elif member and name.endswith((".tar", ".tar.gz", ".tgz")):
            archive = tarfile.open(fileobj=raw, mode="r:*")
            binary = archive.extractfile(member)
            if binary is None:
                raise KeyError(member)
        elif name.endswith(".gz") and not name.endswith(".tar.gz"):
            binary = gzip.GzipFile(fileobj=raw)
        else:
            binary = raw
        if member and PurePosixPath(member).suffix == ".gz":
            binary = gzip.GzipFile(fileobj=binary)
        yield io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None)
    finally:
        raw.close()


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " …[cut]"


RANK_PREFIX = r"(?:\[(?:default|rank){n}\]:|{n}: |\[1,{n}\]<|\[rank{n}\]|rank {n}\b|rank{n}\b)"


def rank_matcher(rank):
    """A predicate for lines that a given rank printed, by the usual launcher prefixes."""
    if rank is None:
        return None
    pattern = re.compile(RANK_PREFIX.format(n=int(rank)), re.IGNORECASE)
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
    except (OSError, KeyError, zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
        page.error = f"This file cannot be read: {error.__class__.__name__}"
    return page


@dataclass
class SearchResult:
    matches: list = field(default_factory=list)  # [(number, text)]
    complete: bool = True
    next_from: int | None = None
    error: str = ""


def search(artifact, query: str, *, member: str = "", rank=None, from_line: int = 1,
           limit: int = SEARCH_MAX_MATCHES, byte_budget: int = SCAN_BYTE_BUDGET) -> SearchResult:
    """Case-insensitive substring search, streaming, bounded by matches and bytes read."""
    result = SearchResult()
    needle = query.lower()
    keep = rank_matcher(rank)
    read = 0
    if not needle:
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
    except (OSError, KeyError, zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
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
    except (OSError, KeyError, zipfile.BadZipFile, tarfile.TarError, EOFError):
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
