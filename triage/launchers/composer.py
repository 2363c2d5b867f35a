"""Launchers that report each child by its global rank and dump its output in a block afterwards
(MosaicML Composer's launcher, and the same shape from other per-process supervisors):

    ERROR:composer.cli.launcher:Rank 4 crashed with exit code 1.
    Global rank 4 (PID 3304) exited with code 1
    ----------Begin global rank 4 STDERR----------
    ...
    ----------End global rank 4 STDERR----------

The exit lines are rank exits; the block markers give the rank of the lines between them (read by the
collector through `block_rank`).
"""

from __future__ import annotations

import re

LITERALS = ("exited with code", "crashed with exit code")

_EXITED = re.compile(r"[Gg]lobal rank (\d{1,6}) \(PID (\d+)\) exited with code (-?\d+)")
_CRASHED = re.compile(r"\bRank (\d{1,6}) crashed with exit code (-?\d+)")
BLOCK = re.compile(r"^-{3,}\s*(Begin|End) (?:global |local )?rank (\d{1,6}) (?:STDOUT|STDERR|output|log)\s*-{3,}", re.I)
BLOCK_LITERALS = ("Begin global rank", "End global rank", "Begin rank", "End rank")


def feed(facts, source: str, lineno: int, text: str, rank):
    from triage.launchers import SIGNALS, RankExit  # the package imports this module

    match = _EXITED.search(text)
    if match:
        code = int(match.group(3))
        facts.saw("composer")
        facts.add_exit(RankExit(rank=int(match.group(1)), pid=int(match.group(2)), exit_code=code,
                                signal=SIGNALS.get(-code) if code < 0 else None, source=source, line=lineno,
                                text=text.strip()[:400]))
        return 0
    match = _CRASHED.search(text)
    if match:
        facts.saw("composer")
        facts.add_exit(RankExit(rank=int(match.group(1)), exit_code=int(match.group(2)), source=source, line=lineno,
                                text=text.strip()[:400]))
    return 0


def block_rank(text: str) -> tuple[str, int] | None:
    """('begin' | 'end', rank) for a per-rank output block marker, else None."""
    match = BLOCK.search(text)
    return (match.group(1).lower(), int(match.group(2))) if match else None
