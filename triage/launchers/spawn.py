"""torch.multiprocessing.spawn (Lightning's ddp_spawn, mp.spawn): a child that died without a traceback.

    torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGKILL
    torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1

The process index is the rank for mp.spawn; a signal death leaves no Python error of its own.
"""

from __future__ import annotations

import re

LITERALS = ("terminated with signal", "terminated with exit code")

_SIGNALS = {"SIGKILL": -9, "SIGSEGV": -11, "SIGABRT": -6, "SIGBUS": -7, "SIGTERM": -15}
_EXITED = re.compile(r"process (\d{1,6}) terminated with (?:signal (SIG[A-Z]+)|exit code (-?\d+))")


def feed(facts, source: str, lineno: int, text: str, rank):
    from triage.launchers import RankExit  # the package imports this module

    match = _EXITED.search(text)
    if not match:
        return 0
    facts.saw("spawn")
    signal = match.group(2)
    code = _SIGNALS.get(signal) if signal else int(match.group(3))
    facts.add_exit(RankExit(rank=int(match.group(1)), exit_code=code, signal=signal, source=source, line=lineno,
                            text=text.strip()[:400]))
    return 0
