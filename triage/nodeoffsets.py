"""Where one node's local ranks start, read from the elastic agent's failure table before the logs are read.

A node's own output numbers its processes locally: torchrun's `--tee` prefix `[default1]:` and its `--log-dir`
folder `attempt_0/1/` are local rank 1 on every node. The agent's failure table at the end of that node's
console gives both numbers for a process:

    host      : dgx-b
    rank      : 9 (local_rank: 1)

so that node's local rank 1 is global rank 9, and the node starts at 8. The table comes last, after the lines
it renumbers, so the tails of the given files are read first (a bounded read: the last 64 KiB of at most 400
plain files). The offsets are keyed by the file's name as the sources name it, and by the host. The same
agent's console names its `--log-dir` run folder when it starts ("Setting worker5 reply file to:
logs/<run id>/attempt_0/5/error.json"), so that folder's per-rank files take its node's offset too (keyed
with the hosts: a folder of that name in a source's path).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from triage.sources import files_under

TAIL_BYTES = 64 * 1024
MAX_FILES = 400
_PLAIN = re.compile(r"\.(?:log|txt|out|err)(?:\.\d{1,4})?$|^[^.]+$", re.IGNORECASE)
# (whatever a collector put before the field: a timestamp, a compose or journald tag, srun's label)
_HOST = re.compile(rb"(?:^|\s)host\s*:\s*([\w.\-]{1,120})\s*$", re.MULTILINE)
_RANK = re.compile(rb"(?:^|\s)rank\s*:\s*(\d{1,6})\s*\(local_rank:\s*(\d{1,6})\)", re.MULTILINE)
# the agent naming its --log-dir run folder: "reply file to: <dir>/<run id>/attempt_0/5/error.json"
_RUN_FOLDER = re.compile(rb"(?:[/\\]|\s)([\w.\-]{6,120})[/\\]attempt_\d{1,3}[/\\]\d{1,5}[/\\]error\.json")


def node_offsets(paths: Sequence[str | Path], names: Mapping[str, str] | None = None
                 ) -> tuple[dict[str, int], dict[str, int]]:
    """({source name: first global rank of its node}, {host: first global rank}) from the failure tables in
    the given files' tails; a file or host whose table entries disagree is left out, and so is offset 0."""
    names = {str(key): value for key, value in (names or {}).items()}
    by_source: dict[str, set[int]] = {}
    by_host: dict[str, set[int]] = {}
    for full, shown in _plain_files(paths, names):
        try:
            with open(full, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - TAIL_BYTES))
                tail = handle.read(TAIL_BYTES)
                if b"local_rank:" not in tail:
                    handle.seek(0)
                    machine = _machine_start(handle.read(_HEAD_BYTES))
                    if machine:
                        by_source.setdefault(shown, set()).add(machine)
                    continue
                handle.seek(0)  # (the run folder is named at the agent's start, before the tail)
                head = handle.read(TAIL_BYTES) if size > TAIL_BYTES else b""
        except OSError:
            continue
        folders = {match.group(1).decode("ascii", "replace") for match in _RUN_FOLDER.finditer(head + tail)}
        hosts = [(match.start(), match.group(1).decode("ascii", "replace")) for match in _HOST.finditer(tail)]
        for match in _RANK.finditer(tail):
            offset = int(match.group(1)) - int(match.group(2))
            by_source.setdefault(shown, set()).add(offset)
            host = next((name for start, name in reversed(hosts) if start < match.start()), None)
            if host:
                by_host.setdefault(host, set()).add(offset)
            for folder in folders:
                by_host.setdefault(folder, set()).add(offset)
    return _agreed(by_source), _agreed(by_host)


# a launcher started once per machine with that machine's index and its processes (detectron2's launch: the
# command or its printed arguments), whose processes number themselves from 0 on every machine
_HEAD_BYTES = 8 * 1024
_MACHINE_ARGS = re.compile(rb"machine_rank=(\d{1,4}), num_gpus=(\d{1,4}), num_machines=(\d{1,4})|"
                           rb"--machine[-_]rank[ =](\d{1,4})\b.{0,200}?--num[-_]gpus[ =](\d{1,4})\b|"
                           rb"--num[-_]gpus[ =](\d{1,4})\b.{0,200}?--machine[-_]rank[ =](\d{1,4})\b")


def _machine_start(head: bytes) -> int | None:
    """The first global rank of the machine whose console this is, from its per-machine launch arguments."""
    found = _MACHINE_ARGS.search(head)
    if found is None:
        return None
    if found.group(1):
        machine, gpus = int(found.group(1)), int(found.group(2))
    elif found.group(4):
        machine, gpus = int(found.group(4)), int(found.group(5))
    else:
        machine, gpus = int(found.group(7)), int(found.group(6))
    return machine * gpus if machine and gpus else None


def offset_of(source_name: str, by_source: dict[str, int], by_host: dict[str, int]) -> int | None:
    """A source's node offset: its own table's, else a host named as a folder or in the file's name."""
    if source_name in by_source:
        return by_source[source_name]
    parts = re.split(r"[/\\]", source_name)
    for host, offset in by_host.items():
        if any(part == host or (len(host) >= 4 and host in part) for part in parts):
            return offset
    return None


def _agreed(found: dict[str, set[int]]) -> dict[str, int]:
    return {key: next(iter(values)) for key, values in found.items() if len(values) == 1 and next(iter(values)) > 0}


def _plain_files(paths: Sequence[str | Path], names: Mapping[str, str]):
    """The given plain-text logs, and those in the given folders, with the names the sources give them."""
    count = 0
    for raw in paths:
        path = Path(str(raw))
        display = names.get(str(raw)) or path.name or str(path)
        found = [(path, display)] if path.is_file() else files_under(path, display) if path.is_dir() else []
        for full, shown in found:
            if not _PLAIN.search(full.name):
                continue
            count += 1
            if count > MAX_FILES:
                return
            yield full, shown
