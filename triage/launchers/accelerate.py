"""accelerate launch: that it ran, and the world size it reports."""

from __future__ import annotations

import re

LITERALS = ("accelerate/commands", "accelerate launch", "num_processes")

_NUM_PROCESSES = re.compile(r"`--num_processes` was set to a value of `(\d+)`")


def feed(facts, source: str, lineno: int, text: str, rank):
    if "accelerate" in text and ("launch" in text or "commands" in text):
        facts.saw("accelerate")
    match = _NUM_PROCESSES.search(text)
    if match and not facts.world_size:
        facts.world_size = int(match.group(1))
    return 0
