"""Ray Train (TorchTrainer): the worker table that maps each worker's pid to its world rank.

    (TorchTrainer pid=88412) - (node_id=3e7a..., ip=10.12.0.5, pid=40220) world_rank=3, local_rank=1, node_rank=1

Errors come back through Ray naming the worker by pid ("(pid=40220, ip=10.12.0.9)", "Process 40220 has
20.1 GiB memory in use"), never by rank; the table turns that pid into the rank.
"""

from __future__ import annotations

import re

LITERALS = ("world_rank=",)

_TABLE = re.compile(r"\bpid=(\d+)\)?,?\s*world_rank=(\d+)")


def feed(facts, source: str, lineno: int, text: str, rank):
    match = _TABLE.search(text)
    if match:
        facts.saw("ray")
        facts.state.setdefault("pid_rank", {})[int(match.group(1))] = int(match.group(2))
    return 0
