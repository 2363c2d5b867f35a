"""Python's faulthandler stacks, printed when a process dies of a signal inside native code:

    Fatal Python error: Segmentation fault

    Current thread 0x00007f271ac1fb80 (most recent call first):
      File "/srv/job/train.py", line 128 in source_key
      File "/srv/job/train.py", line 240 in train

Only the "Current thread" block is the crashing thread; its first frame is the innermost call. The
collector feeds candidate lines here per (source, rank); a finished stack lands in
`Collected.fault_stacks` for stage 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LITERALS = ("Fatal Python error", "Current thread")
_FATAL = re.compile(
    r"Fatal Python error: (Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)"
)
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)')
MAX_FRAMES = 50
MAX_STACKS = 256  # a hostile log of a million "Fatal Python error" lines costs no more than this


@dataclass
class FaultStack:
    source: str
    rank: int | None
    line: int
    text: str
    signal: str
    seq: int
    t: float | None
    frames: list[dict] = field(default_factory=list)
    current: bool = False  # inside the crashing thread's block


class FaultStacks:
    def __init__(self, sink: list[FaultStack]):
        self.sink = sink
        self.open: dict[tuple[str, int | None], FaultStack] = {}

    def feed(self, source: str, rank: int | None, lineno: int, text: str, seq: int, t: float | None) -> None:
        if "Fatal Python error" in text:
            match = _FATAL.search(text)
            if match and len(self.sink) < MAX_STACKS:
                stack = FaultStack(source, rank, lineno, text.strip()[:300], match.group(1), seq, t)
                self.open[(source, rank)] = stack
                self.sink.append(stack)
            return
        stack = self.open.get((source, rank))
        if stack is None:
            return
        if "Current thread" in text:
            stack.current = True
            return
        if "thread 0x" in text.lower():  # another thread's block: not the crash
            stack.current = False
            return
        frame = _FRAME.match(text)
        if frame is None:
            return
        if stack.current and len(stack.frames) < MAX_FRAMES:
            stack.frames.append(
                {"file": frame.group(1), "line": int(frame.group(2)), "function": frame.group(3), "log_line": lineno}
            )
