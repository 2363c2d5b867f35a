"""Open what the user gave us as named binary streams, safely.

Plain files, .gz, .zip, .tar(.gz|.bz2|.xz), folders (recursively) and the tree that
`torchrun --log-dir` writes; a console's CSV or JSON export is read as the lines it carries (exports.py). Containers are read through triage.archives, which counts every
byte read out of them, so bombs are stopped while streaming, never trusted from headers.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from triage import exports, unwrap
from triage.archives import (
    READ_ERRORS,
    READ_SIZE,
    Budget,
    capped,
    gz_inner_name,
    members,
    sniff_kind,
    unreadable,
)
from triage.errors import InputRejected, UnusableInput
from triage.limits import Limits

_LOGDIR_RANK = re.compile(r"(?:^|/)attempt_\d+/(\d+)/(?:stdout|stderr)\.log$")
_LOGDIR_ERROR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/error\.json$")
# a per-process file: "rank3.log", "worker_3.txt", AzureML's "std_log_process_3.txt" and "70_driver_log_3.txt"
_NAME_RANK = re.compile(r"(?:rank|process|proc|worker|gpu|driver_log)[_\-.]?(\d{1,5})(?:\D|$)", re.IGNORECASE)
# a Kubernetes job's replica pod ("llama-ft-worker-1", "kubectl-logs-job-master-0.txt"): one node's launcher with
# all of its ranks, not a rank
_POD_REPLICA = re.compile(r"[-_.](?:master|worker|launcher)-\d{1,4}(?:\.[A-Za-z]{1,5})?$", re.IGNORECASE)


def is_pod_replica(name: str) -> bool:
    """A log named for a Kubernetes job's replica pod ("llama-ft-worker-1.log")."""
    return bool(_POD_REPLICA.search(name.replace("\\", "/").rsplit("/", 1)[-1]))


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
    path: Path | None = None  # set for plain files on disk past unwrap.MAX_UNWRAP (a faster scanner reads them)


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
    if kind == "plain":
        with open(path, "rb") as handle:
            converted = _export_lines(handle)
            if converted is not None:  # a console's CSV/JSON export: read the lines it carries, oldest first
                yield make_source(name, io.BytesIO(b"\n".join(converted) + b"\n"))
                return
            handle.seek(0)
            if os.fstat(handle.fileno()).st_size <= unwrap.MAX_UNWRAP:
                # a pasted console, read once: with its hard wrapping undone when it shows any (a file this
                # small never goes to the grep scanner, which wants a path)
                data = handle.read()
                yield make_source(name, io.BytesIO(unwrap.unwrap(data) or data))
                return
            source = make_source(name, handle)
            source.path = path
            yield source
        return
    budget = Budget(limits, path.stat().st_size)
    if kind == "gz":
        try:
            with gzip.open(path, "rb") as raw:
                inner = gz_inner_name(name)
                yield make_source(inner, capped(raw, inner, budget))
        except UnusableInput:
            raise
        except READ_ERRORS as exc:
            raise unreadable(name, exc) from None
        return
    for member in members(path, name, kind, budget):
        if Path(member.name).name not in _SKIP:
            yield make_source(f"{name}/{member.name}", member.stream)


def _export_lines(handle: BinaryIO) -> list[bytes] | None:
    """The lines of a console's export, read from the open file; None for any other file (left unread
    past its first 4 KiB)."""
    try:
        kind = exports.sniff(handle.read(4096))
        if kind is None or os.fstat(handle.fileno()).st_size > exports.MAX_EXPORT:
            return None
        handle.seek(0)
        return exports.lines(handle.read(), kind)
    except OSError:
        return None


def make_source(name: str, stream: BinaryIO) -> Source:
    clean = name.replace("\\", "/")
    source = Source(name=name, stream=stream)
    match = _LOGDIR_RANK.search(clean) or _LOGDIR_ERROR.search(clean)
    base = clean.rsplit("/", 1)[-1]
    if match:
        source.local_rank_hint = int(match.group(1))
    else:
        named = None if is_pod_replica(base) else _NAME_RANK.search(base)
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
    for raw_path in _rotations_in_order(list(paths), lambda path: names.get(str(path)) or Path(str(path)).name):
        path = Path(raw_path)
        display = names.get(str(raw_path)) or path.name or str(path)
        if not path.exists():
            raise UnusableInput(f"no such file or folder: {display}")
        if path.is_dir():
            yield from _walk(path, display, limits)
        else:
            yield from _open_file(path, display, limits, depth=0)


_ROTATED = re.compile(r"^(.+\.(?:log|txt|out|err))\.(\d{1,4})$")


def rotation_order(name: str) -> tuple:
    """Sort key that puts a rotated log's older files first: train.log.2, train.log.1, train.log (a logging
    RotatingFileHandler's names); other names sort as themselves."""
    found = _ROTATED.match(name)
    if found:
        return (found.group(1), 0, -int(found.group(2)))
    return (name, 1, 0)


def _rotations_in_order(paths: list, shown) -> list:
    """The given paths in their order, except that the files of one rotated log follow their rotation order
    (judged by the names the user sees: `shown(path)`, e.g. an upload's original file name)."""
    names = [str(shown(path)) for path in paths]
    keys = [rotation_order(os.path.basename(name)) for name in names]
    bases = {}
    for index, key in enumerate(keys):
        bases.setdefault((os.path.dirname(names[index]), key[0]), []).append(index)
    out = list(paths)
    for siblings in bases.values():
        if len(siblings) > 1:
            ordered = sorted(siblings, key=lambda index: keys[index])
            for slot, index in zip(siblings, ordered, strict=True):
                out[slot] = paths[index]
    return out


def files_under(folder: Path, display: str) -> Iterator[tuple[Path, str]]:
    """The plain files of a folder in reading order (a rotated log's older files first), each with the name the
    sources give it: the folder's shown name, then the path inside it. Links are never followed."""
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for file_name in sorted(files, key=rotation_order):
            full = Path(root) / file_name
            if file_name in _SKIP or full.is_symlink() or not full.is_file():
                continue
            yield full, f"{display}/{full.relative_to(folder).as_posix()}"


def _walk(folder: Path, display: str, limits: Limits) -> Iterator[Source]:
    for count, (full, name) in enumerate(files_under(folder, display), start=1):
        if count > limits.max_members:
            raise InputRejected(f"folder {display} has more than {limits.max_members} files", code="too_many_members")
        yield from _open_file(full, name, limits, depth=0)
