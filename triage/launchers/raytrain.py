"""Ray Train (TorchTrainer): the worker table that maps each worker's pid to its world rank.

    (TorchTrainer pid=88412) - (node_id=3e7a..., ip=10.12.0.5, pid=40220) world_rank=3, local_rank=1, node_rank=1

Errors come back through Ray naming the worker by pid ("(pid=40220, ip=10.12.0.9)", "Process 40220 has
20.1 GiB memory in use"), never by rank; the table turns that pid into the rank.
"""

from __future__ import annotations

import re

LITERALS = ("world_rank=", "RayTaskError(")

_TABLE = re.compile(r"\bpid=(\d+)\)?,?\s*world_rank=(\d+)")
# Ray re-raising a remote error on the driver: "RayTaskError(ZeroDivisionError): ray::X.method() (pid=2391, ..."
_TASK_ERROR = re.compile(r"RayTaskError\((\w+)\): ray::[\w.]+\(\) \(pid=(\d+)")


def feed(facts, source: str, lineno: int, text: str, rank):
    match = _TABLE.search(text)
    if match:
        facts.saw("ray")
        facts.state.setdefault("pid_rank", {})[int(match.group(1))] = int(match.group(2))
    match = _TASK_ERROR.search(text)
    if match:  # which process raised which class: the table turns the pid into a rank
        raised = facts.state.setdefault("task_error_pids", [])
        if len(raised) < 256:
            raised.append((match.group(1), int(match.group(2))))
    return 0


# a Ray actor's lead on a line that also carries the worker's own rank tag: "(WorkerDict pid=41877, ip=...) [rank5]:"
_ACTOR_PID = re.compile(r"\((?:[\w.:\-]+(?:\[[\w=:, ]{1,40}\])?\s+)?pid=(\d+)(?:,\s*ip=[\w.:\-]+)?\)\s")


def learn_actor_rank(facts, text: str, rank: int) -> None:
    """A Ray actor seen with its rank tag: that pid is that rank wherever Ray later names the pid alone (its
    RayTaskError lines), as in Ray Train's start-up table."""
    actor = _ACTOR_PID.match(text)
    if actor is not None:
        table = facts.state.setdefault("pid_rank", {})
        if len(table) < 4096:
            table.setdefault(int(actor.group(1)), rank)
