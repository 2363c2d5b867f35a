"""What the launchers say about their children: exit codes, signals, "Root Cause" blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triage import decorations
from triage.launchers import (
    accelerate,
    composer,
    deepspeed,
    mpirun,
    ncclinit,
    raytrain,
    slurm,
    spawn,
    torchrun,
)

PARSERS = (torchrun, deepspeed, accelerate, mpirun, spawn, slurm, composer, raytrain, ncclinit)
LITERALS: tuple[str, ...] = tuple(lit for parser in PARSERS for lit in parser.LITERALS)

SIGNALS = {
    1: "SIGHUP",
    2: "SIGINT",
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    9: "SIGKILL",
    11: "SIGSEGV",
    13: "SIGPIPE",
    15: "SIGTERM",
}


@dataclass
class RankExit:
    rank: int | None
    local_rank: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    pid: int | None = None
    time: str | None = None
    host: str | None = None
    source: str = ""
    line: int = 0
    text: str = ""
    root_cause_block: bool = False
    error_file: str | None = None
    # DeepSpeed's launcher prints the command of the LAST process it spawned beside the return code of the
    # one that ended, so the local rank on that line is a guess: good when nothing else names a rank,
    # never enough to overrule a rank's own error
    rank_is_a_guess: bool = False


@dataclass
class LauncherFacts:
    launchers: list[str] = field(default_factory=list)  # in order of first sight
    exits: list[RankExit] = field(default_factory=list)
    sigterm_pids: set[int] = field(default_factory=set)
    root_cause_rank: int | None = None
    root_cause_time: str | None = None  # its block's `time` field, when it had one
    world_size: int | None = None
    kernel_oom: list[dict] = field(default_factory=list)  # evidence of the kernel/slurm OOM killer
    state: dict = field(default_factory=dict)  # parser scratch space (block parsing)

    def saw(self, launcher: str) -> None:
        if launcher not in self.launchers:
            self.launchers.append(launcher)

    def add_exit(self, item: RankExit) -> None:
        if item.exit_code is not None and item.exit_code < 0 and not item.signal:
            item.signal = SIGNALS.get(-item.exit_code)
        if len(self.exits) < 4096:
            self.exits.append(item)

    def resolve_ranks(self, node_offset: int = 0) -> None:
        """local_rank + node -> global rank, where the launcher told us the node layout (DeepSpeed world info)
        or the command is one node's launch with its node rank (``node_offset``: that node's first rank)."""
        slots = self.state.get("node_slots") or []
        offsets, total = {}, 0
        for host, count in slots:
            offsets[host] = total
            total += count
        # the elastic agent's Root Cause block names the global rank of a pid its "failed ... local_rank: N
        # (pid: P)" line gave only locally: on a second node local rank 0 is global rank nproc, not 0
        by_pid = {
            (item.source, item.pid): item.rank
            for item in self.exits
            if item.root_cause_block and item.rank is not None and item.pid is not None
        }
        node_first = self.state.get("node_first_rank") or {}
        for item in self.exits:
            if item.rank is None and item.pid is not None and (item.source, item.pid) in by_pid:
                item.rank = by_pid[(item.source, item.pid)]
            if item.rank is None and item.local_rank is not None:
                first = node_first.get(deepspeed.node_key(item.host, item.source))
                if item.host in offsets:
                    item.rank = offsets[item.host] + item.local_rank
                elif first is not None:
                    item.rank = first + item.local_rank
                elif not slots or len(slots) == 1:
                    item.rank = item.local_rank + (node_offset if not slots else 0)

    def exit_for(self, rank: int) -> RankExit | None:
        """The most telling exit record of a rank (a real exit code beats a bare mention)."""
        best = None
        for item in self.exits:
            if item.rank == rank and (
                best is None or (best.exit_code is None and item.exit_code is not None)
            ):
                best = item
        return best

    def is_sigterm_only(self, rank: int) -> bool:
        item = self.exit_for(rank)
        if item is None:
            return False
        return (
            item.exit_code == -15
            or item.signal == "SIGTERM"
            or (item.pid is not None and item.pid in self.sigterm_pids)
        )


QUICK = _QUICK = re.compile(
    "|".join(re.escape(literal) for literal in sorted(set(LITERALS), key=len, reverse=True))
)


def feed(
    facts: LauncherFacts, source: str, lineno: int, text: str, rank: int | None, host: str | None = None
) -> int:
    """Returns how many following lines the caller should pass through unconditionally."""
    if not _QUICK.search(text) and not (facts.state.get("torchrun") or {}).get("block"):
        return 0
    text = decorations.without_collector_lead(text)
    facts.state["current_host"] = host
    follow = 0
    for parser in PARSERS:
        follow = max(follow, parser.feed(facts, source, lineno, text, rank) or 0)
    return follow
