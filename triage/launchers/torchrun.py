"""torch elastic (torchrun, python -m torch.distributed.run/launch)."""

from __future__ import annotations

import re
from datetime import datetime

LITERALS = (
    "failed (exitcode",
    "closing signal",
    "Root Cause",
    "Failures:",
    "exitcode  :",
    "exitcode:",
    "ChildFailedError",
    "torch.distributed.elastic",
    "error_file",
    "received by PID",
    "rank      :",
    "torch/distributed/run.py",
    "torch.distributed.run",
    "torch.distributed.launch",
)

_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_SIGTERM = re.compile(r"Sending process (\d+) closing signal (SIG\w+)")
_BLOCK_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
_RANK = re.compile(r"(\d+) \(local_rank: (\d+)\)")
_EXITCODE = re.compile(r"(-?\d+) \(pid: (\d+)\)(?:\s*\((SIG\w+)\))?")
_SIGNAL_TRACE = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")


def feed(facts, source: str, lineno: int, text: str, rank):
    from triage.launchers import RankExit

    state = facts.state.setdefault("torchrun", {"block": None, "entry": None})
    if "torch.distributed.elastic" in text or "ChildFailedError" in text or "torchrun" in text:
        facts.saw("torchrun")
    if "-m torch.distributed.launch " in text:
        # the old launcher's command as the user ran it (a shell prompt line): whether it asked for the
        # environment variables (--use_env) decides where the script finds its local rank
        facts.state["old_launch_command"] = text.strip()[:2000]
    match = _FAILED.search(text)
    if match:
        facts.saw("torchrun")
        facts.add_exit(
            RankExit(
                rank=None,
                local_rank=int(match.group(2)),
                exit_code=int(match.group(1)),
                pid=int(match.group(3)),
                source=source,
                line=lineno,
                text=text.strip(),
            )
        )
        return 0
    match = _SIGTERM.search(text)
    if match:
        facts.sigterm_pids.add(int(match.group(1)))
        return 0
    stripped = text.strip()
    if stripped.startswith("Failures:"):
        state["block"] = "failures"
        return 60
    if stripped.startswith("Root Cause"):
        state["block"] = "root"
        return 60
    if state["block"] is None:
        return 0
    if stripped.startswith("=" * 20):
        state["block"] = None
        state["entry"] = None
        return 0
    entry = _BLOCK_ENTRY.match(text)
    if entry:
        state["entry"] = RankExit(
            rank=int(entry.group(1)), source=source, line=lineno, root_cause_block=state["block"] == "root"
        )
        facts.add_exit(state["entry"])
        return 40
    current = state["entry"]
    field_match = _FIELD.match(text)
    if current is None or not field_match:
        return 40
    name, value = field_match.group(1), field_match.group(2).strip()
    if name == "time":
        current.time = value
    elif name == "host":
        current.host = value
    elif name == "rank":
        ranks = _RANK.search(value)
        if ranks:
            current.rank, current.local_rank = int(ranks.group(1)), int(ranks.group(2))
        if current.root_cause_block and current.rank is not None and not _well_after(current.time,
                                                                                   facts.root_cause_time):
            # one agent per node, one block each: a block well after another's is a consequence of it (node
            # clocks differ by a second or two, so a closer pair keeps the last block's, as before)
            facts.root_cause_rank, facts.root_cause_time = current.rank, current.time or facts.root_cause_time
    elif name == "exitcode":
        code = _EXITCODE.search(value)
        if code:
            current.exit_code, current.pid = int(code.group(1)), int(code.group(2))
            current.signal = code.group(3)
            current.text = stripped
            current.line = lineno
            if current.exit_code < 0 and not current.signal:
                from triage.launchers import SIGNALS

                current.signal = SIGNALS.get(-current.exit_code)
    elif name == "error_file":
        current.error_file = None if value.startswith("<N/A>") else value
    elif name == "traceback":
        signal = _SIGNAL_TRACE.search(value)
        if signal:
            current.signal = signal.group(2)
    return 40


_BLOCK_TIME = "%Y-%m-%d_%H:%M:%S"
_CLOCK_SLACK_S = 5.0


def _well_after(time: str | None, other: str | None) -> bool:
    """Block time ``time`` is more than a few seconds after ``other`` (both as the agent prints them)."""
    if not time or not other:
        return False
    try:
        return (datetime.strptime(time, _BLOCK_TIME) - datetime.strptime(other, _BLOCK_TIME)).total_seconds() \
            > _CLOCK_SLACK_S
    except ValueError:
        return False
