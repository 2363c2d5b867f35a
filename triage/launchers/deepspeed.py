"""DeepSpeed launcher and pdsh runner, and subprocess wrappers (accelerate and mpirun have their own modules)."""

from __future__ import annotations

import ast
import re

LITERALS = (
    "WORLD INFO DICT",
    "world_size",
    "num_processes",
    "return code",
    "Killing subprocess",
    "launch.py:",
    "runner.py:",
    "non-zero exit status",
    "died with <Signals",
    "spawned with command",
    "Killed process",
    "oom-kill:",
    "received SIGTERM",
    "exit code",
)

_RETURN = re.compile(r"exits with return code = (-?\d+)")
_LOCAL = re.compile(r"--local_rank=(\d+)")
_KILLING = re.compile(r"Killing subprocess (\d+)")
_STATUS = re.compile(r"returned non-zero exit status (-?\d+)")
_WORLD_INFO = re.compile(r"WORLD INFO DICT: (\{.{0,4000}\})")
_WORLD_SIZE = re.compile(r"\bdist_world_size=(\d+)|\bworld_size[=:] ?(\d+)")
_SPAWNED = re.compile(r"process (\d+) spawned with command: .{0,400}?--local_rank=(\d+)")
_OOM_KILLED = re.compile(r"Killed process (\d+)|oom-kill:.{0,300}\bpid=(\d+)")
_DIED = re.compile(r"died with <Signals\.(SIG\w+): (\d+)>")
# launch.py's own line on each node: "nnodes=4, num_local_procs=8, node_rank=3" (that node starts at rank 24)
_NODE_LAYOUT = re.compile(r"\bnum_local_procs=(\d{1,4}), node_rank=(\d{1,5})\b")


def node_key(host: str | None, source: str) -> str:
    """Which node a launcher line belongs to: its pdsh host prefix, else its file (one file per node)."""
    return host or f"file:{source}"


def feed(facts, source: str, lineno: int, text: str, rank):
    lowered_hint = "deepspeed" in text.lower()
    if lowered_hint and (
        "launch.py" in text or "launcher" in text or "runner.py" in text or "[INFO]" in text
    ):
        facts.saw("deepspeed")
    match = _SPAWNED.search(text)
    if match:  # the launcher's own record of which process is which local rank
        facts.state.setdefault("spawned", {})[int(match.group(1))] = int(match.group(2))
    match = _OOM_KILLED.search(text)
    if match:  # the kernel names the pid it killed
        facts.state.setdefault("oom_killed_pids", []).append(int(match.group(1) or match.group(2)))
    match = _WORLD_INFO.search(text)
    if match:
        try:
            world = ast.literal_eval(match.group(1))
            facts.state["node_slots"] = [(str(host), len(slots)) for host, slots in world.items()]
            facts.world_size = facts.world_size or sum(count for _, count in facts.state["node_slots"])
        except (ValueError, SyntaxError, TypeError, AttributeError):
            pass
    match = _NODE_LAYOUT.search(text)
    if match:
        where = node_key(facts.state.get("current_host"), source)
        facts.state.setdefault("node_first_rank", {})[where] = int(match.group(1)) * int(match.group(2))
    match = _WORLD_SIZE.search(text)
    if match and not facts.world_size:
        facts.world_size = int(next(group for group in match.groups() if group))
    match = _RETURN.search(text)
    if match:
        _add_exit(facts, text, source, lineno, int(match.group(1)), host=facts.state.get("current_host"), guess=True)
        facts.saw("deepspeed")
        return 0
    match = _DIED.search(text)
    if match:
        _add_exit(facts, text, source, lineno, -int(match.group(2)), signal=match.group(1),
                  host=facts.state.get("current_host"))
        return 0
    match = _STATUS.search(text)
    if match and "ssh" not in text:
        _add_exit(facts, text, source, lineno, int(match.group(1)))
        return 0
    return 0


def _add_exit(
    facts, text: str, source: str, lineno: int, exit_code: int, *, signal=None, host=None, guess=False
) -> None:
    """A launcher line that reports one local process's end (its global rank is resolved later)."""
    from triage.launchers import RankExit  # the package imports this module

    local = _LOCAL.search(text)
    facts.add_exit(
        RankExit(
            rank=None,
            local_rank=int(local.group(1)) if local else None,
            exit_code=exit_code,
            signal=signal,
            source=source,
            line=lineno,
            text=text.strip()[:1500],  # (a rank's argv list runs long: its flags are read from it)
            host=host,
            rank_is_a_guess=guess,
        )
    )
