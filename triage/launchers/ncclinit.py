"""NCCL's own start-up lines (NCCL_DEBUG=INFO): which process and which GPU is which rank.

    gpu-08:51233:51413 [3] NCCL INFO ncclCommInitRank comm 0x53a1c3e0 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 61000 ...

A kernel's Xid line names the GPU's PCI address and the process id ("NVRM: Xid (PCI:0000:61:00): 149, pid=51233"),
never a rank; this table turns the pid into the rank, and the bus id on a host ("busId 61000") into the rank where
the Xid names no pid. Only the widest communicator counts: a sub-group's
communicator (tensor or pipeline parallel) numbers its ranks from 0 again.
"""

from __future__ import annotations

import re

LITERALS = ("ncclCommInitRank", "Init COMPLETE")

# "ncclCommInitRank comm 0x.. rank 11 nranks 16 ..." and the later "comm 0x.. rank 13 nranks 16 cudaDev 5 nvmlDev 5
# busId ba000 commId 0x.. - Init COMPLETE"
_INIT = re.compile(r"^([\w.\-]+):(\d+):\d+ \[\d+\] NCCL INFO (?:ncclCommInitRank\b.*?|comm 0x[0-9a-f]+ )"
                   r"\brank (\d+) nranks (\d+)\b(?:.*?\bbusId ([0-9a-f]{4,12})\b)?")


def feed(facts, source: str, lineno: int, text: str, rank):
    match = _INIT.search(text.strip())
    if match is None:
        return 0
    host, pid, global_rank, ranks = match.group(1), int(match.group(2)), int(match.group(3)), int(match.group(4))
    widest = facts.state.get("nccl_init_nranks", 0)
    if ranks < widest:
        return 0
    table = facts.state.setdefault("pid_rank", {})
    if ranks > widest:  # a wider communicator than those seen: its numbering is the global one
        facts.state["nccl_init_nranks"] = ranks
        for known in facts.state.setdefault("nccl_init_pids", []):
            table.pop(known, None)
        facts.state["nccl_init_pids"] = []
    if len(table) < 4096:
        table[pid] = global_rank
        facts.state["nccl_init_pids"].append(pid)
        if match.group(5):  # the GPU's PCI bus id on that host: a kernel's Xid line names it
            facts.state.setdefault("bus_rank", {})[(host, match.group(5).lower())] = global_rank
    return 0


def rank_of_bus(facts, pci: str, where: str) -> int | None:
    """The rank whose GPU a kernel line's PCI address ("0000:ba:00") names: NCCL's busId "ba000", on the host the
    kernel line came from (named in its file's path) or on the only host that has that bus id."""
    parts = pci.lower().split(":")
    if len(parts) < 3:
        return None
    bus_id = f"{parts[-2]}{parts[-1][:2]}0"
    found = {host: rank for (host, bus), rank in (facts.state.get("bus_rank") or {}).items() if bus == bus_id}
    here = [rank for host, rank in found.items() if host in where]
    if len(here) == 1:
        return here[0]
    return next(iter(found.values())) if len(found) == 1 else None
