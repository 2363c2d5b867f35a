"""mpirun / Open MPI (Horovod jobs): which process ended first, and how.

Forms: one line ("rank 3 with PID 812 on node gpu-4 exited on signal 9"; Cray PALS's "rank 13 exited with
code 1" / "rank 12 died from signal 15"), and the block mpirun prints when the first process exits non-zero:

    mpirun detected that one or more processes exited with non-zero status, ... The first process to do so was:
      Process name: [[40112,1],0]
      Exit code:    1
"""

from __future__ import annotations

import re

LITERALS = ("exited on signal", "Process name: [[", "Exit code:", "exited with code", "died from signal")

_SIGNAL = re.compile(r"rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)")
# Cray PALS / HPE mpiexec: "host: rank 13 exited with code 1", "host: rank 12 died from signal 15"
_PALS = re.compile(r"\brank (\d+) (?:exited with code (-?\d+)|died from signal (\d+))")
_PROCESS = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
_EXIT = re.compile(r"^\s*Exit code:\s*(-?\d+)")
BLOCK_LINES = 3  # the exit code follows the process name within this many lines


def feed(facts, source: str, lineno: int, text: str, rank):
    from triage.launchers import RankExit  # the package imports this module

    match = _SIGNAL.search(text)
    if match:
        facts.saw("mpirun")
        facts.add_exit(RankExit(rank=int(match.group(1)), exit_code=-int(match.group(4)), pid=int(match.group(2)),
                                host=match.group(3), source=source, line=lineno, text=text.strip()))
        return 0
    match = _PALS.search(text)
    if match:
        facts.saw("mpirun")
        code = int(match.group(2)) if match.group(2) is not None else -int(match.group(3))
        facts.add_exit(RankExit(rank=int(match.group(1)), exit_code=code, source=source, line=lineno,
                                text=text.strip()))
        return 0
    match = _PROCESS.search(text)
    if match:
        facts.saw("mpirun")
        facts.state["mpirun_process"] = (int(match.group(1)), source, lineno)
        return BLOCK_LINES
    pending = facts.state.get("mpirun_process")
    match = _EXIT.match(text)
    if match and pending and pending[1] == source and 0 < lineno - pending[2] <= BLOCK_LINES:
        facts.state.pop("mpirun_process", None)
        facts.add_exit(RankExit(rank=pending[0], exit_code=int(match.group(1)), source=source, line=lineno,
                                text=text.strip()))
    return 0
