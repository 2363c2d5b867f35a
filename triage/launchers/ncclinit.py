"""NCCL's own start-up lines (NCCL_DEBUG=INFO): which process and which GPU is which rank.

    gpu-08:51233:51413 [3] NCCL INFO ncclCommInitRank comm 0x53a1c3e0 rank 11 nranks 16 cudaDev 3 nvmlDev 3 busId 61000 ...

A kernel's Xid line names the GPU's PCI address and the process id ("NVRM: Xid (PCI:0000:61:00): 149, pid=51233"),
never a rank; this table turns the pid into the rank. Only the widest communicator counts: a sub-group's
communicator (tensor or pipeline parallel) numbers its ranks from 0 again.
"""

from __future__ import annotations

import re

LITERALS = ("ncclCommInitRank",)

_INIT = re.compile(r"^[\w.\-]+:(\d+):\d+ \[\d+\] NCCL INFO ncclCommInitRank\b.*?\brank (\d+) nranks (\d+)\b")


def feed(facts, source: str, lineno: int, text: str, rank):
    match = _INIT.search(text.strip())
    if match is None:
        return 0
    pid, global_rank, ranks = int(match.group(1)), int(match.group(2)), int(match.group(3))
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
    return 0
