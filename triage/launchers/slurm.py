"""Slurm (srun/slurmstepd) and the kernel OOM killer."""

from __future__ import annotations

import re

LITERALS = (
    "srun:",
    "slurmstepd",
    "oom_kill",
    "oom-kill",
    "Out of memory: Kill",
    "Killed process",
    "oom-killer",
)

_TASK = re.compile(
    r"srun: error: (\S+): tasks? ([\d,\-]+): (Exited with exit code (\d+)|Killed|Terminated|"
    r"Segmentation fault|Aborted|Bus error|Out Of Memory)"
)
_KERNEL = re.compile(r"oom_kill event|oom-kill|Out of memory: Kill|Killed process \d+|invoked oom-killer")


def feed(facts, source: str, lineno: int, text: str, rank):
    from triage.launchers import RankExit

    if "srun:" in text or "slurmstepd" in text:
        facts.saw("slurm")
    match = _TASK.search(text)
    if match:
        code = int(match.group(4)) if match.group(4) else None
        kind = match.group(3)
        signal = {
            "Killed": "SIGKILL",
            "Terminated": "SIGTERM",
            "Segmentation fault": "SIGSEGV",
            "Aborted": "SIGABRT",
            "Bus error": "SIGBUS",
            "Out Of Memory": "SIGKILL",  # the step's cgroup OOM killer
        }.get(kind)
        for task in _tasks(match.group(2)):
            facts.add_exit(
                RankExit(
                    rank=task,
                    exit_code=code if code is not None else None,
                    signal=signal,
                    host=match.group(1),
                    source=source,
                    line=lineno,
                    text=text.strip(),
                )
            )
    if _KERNEL.search(text):
        facts.kernel_oom.append({"source": source, "line": lineno, "text": text.strip(), "rank": rank})
    return 0


def _tasks(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            low, _, high = part.partition("-")
            if low.isdigit() and high.isdigit():
                out.extend(range(int(low), min(int(high), int(low) + 4096) + 1))
        elif part.isdigit():
            out.append(int(part))
    return out
