"""Hostile logs of traceback openers from several ranks, alternating or interleaved: the engine
parses each distinct opener line once per traceback it opens, not once per line (issue 15).

The bound is asserted on work done (lines parsed by the collector, tracebacks opened), not on
wall-clock time; bench/robustness_bench.py prints the time."""
import random

import pytest

from triage import collect, diagnose, tracebacks
from triage.tracebacks import Assemblers, TracebackAssembler

HEADER = "Traceback (most recent call last):"
FLOOD_LINES = 100_000


def real_traceback(prefix: str, exception: str = "KeyError: 'conversations'") -> str:
    body = [HEADER, '  File "/srv/train.py", line 12, in <module>', "    batch = next(loader)", exception]
    return "".join(f"{prefix}{line}\n" for line in body)


@pytest.fixture
def work(monkeypatch):
    """Counts the lines the collector parses and the tracebacks the assemblers open."""
    counts = {"lines": 0, "opened": 0}
    parse_line = collect.Collector._line

    def counting_line(self, source, lineno, raw, *args, **kwargs):
        counts["lines"] += bool(raw.strip())  # a blank line returns at once
        return parse_line(self, source, lineno, raw, *args, **kwargs)

    class CountingTraceback(tracebacks.Traceback):
        def __init__(self, *args, **kwargs):
            counts["opened"] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(collect.Collector, "_line", counting_line)
    monkeypatch.setattr(tracebacks, "Traceback", CountingTraceback)
    return counts


def diagnosed(tmp_path, name: str, text: str) -> dict:
    path = tmp_path / name
    path.write_text(text)
    return diagnose([path]).to_dict()


FLOODS = {
    "two ranks alternating": lambda rng: [f"[rank{n % 2}]: {HEADER}" for n in range(FLOOD_LINES)],
    "eight ranks in random order": lambda rng: [f"[rank{rng.randrange(8)}]: {HEADER}" for _ in range(FLOOD_LINES)],
    "four prefix styles": lambda rng: [f"{('[rank0]: ', '1: ', '[default2]:', '[rank3]:')[n % 4]}{HEADER}"
                                       for n in range(FLOOD_LINES)],
    "blank lines between": lambda rng: [f"[rank{n % 3}]: {HEADER}\n" for n in range(FLOOD_LINES // 2)],
}


@pytest.mark.parametrize("flood", FLOODS, ids=list(FLOODS))
def test_interleaved_openers_are_parsed_once_each(tmp_path, work, flood):
    rng = random.Random(15)
    lines = FLOODS[flood](rng)
    distinct = len(set(lines))
    tail = real_traceback("[rank1]: ")
    flooded = diagnosed(tmp_path, "flood.log", "\n".join(lines) + "\n" + tail)
    parsed, opened = work["lines"], work["opened"]

    # Every distinct opener line once, the real traceback's lines, and nothing per repeat.
    assert parsed <= distinct + tail.count("\n") + 5, parsed
    assert opened <= distinct + 2, opened
    single = diagnosed(tmp_path, "single.log", tail)
    assert flooded["category"] == single["category"] == "data_schema"
    assert flooded["failing_rank"] == single["failing_rank"] == 1
    assert flooded["root_cause"]["exception"] == single["root_cause"]["exception"] == "KeyError"


def test_tracebacks_of_every_rank_after_the_flood_are_assembled_as_without_it(tmp_path, work):
    flood = "".join(f"[rank{n % 4}]: {HEADER}\n" for n in range(FLOOD_LINES))
    tail = (real_traceback("[rank2]: ", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
            + real_traceback("[rank0]: ", "RuntimeError: NCCL communicator was aborted"))
    flooded = diagnosed(tmp_path, "flood.log", flood + tail)
    assert work["lines"] <= 4 + tail.count("\n") + 5
    short = diagnosed(tmp_path, "short.log", "".join(f"[rank{n}]: {HEADER}\n" for n in range(4)) + tail)
    assert flooded["category"] == short["category"] == "gpu_oom"
    assert flooded["failing_rank"] == short["failing_rank"] == 2
    shift = FLOOD_LINES - 4  # the same lines, further down the file
    assert [item["line"] - shift for item in flooded["root_cause"]["evidence"]] == [
        item["line"] for item in short["root_cause"]["evidence"]]


def test_a_header_is_parsed_again_once_its_traceback_got_a_line():
    sink, assemblers = [], Assemblers()
    opener = b"[rank0]: " + HEADER.encode()

    def feed(lineno, raw, rank=0):
        if assemblers.repeated(raw):
            return "skipped"
        assembler = assemblers.get(rank)
        if assembler is None:
            assembler = assemblers[rank] = TracebackAssembler("x.log", rank, sink)
        assembler.feed(lineno, raw.decode().split(": ", 1)[1], lineno, None)
        return "parsed"

    assert feed(1, opener) == "parsed"
    assert feed(2, b"[rank1]: " + HEADER.encode(), rank=1) == "parsed"
    assert feed(3, opener) == "skipped"  # rank 0's traceback is still open and empty
    assert feed(4, b'[rank0]:   File "/srv/train.py", line 3, in <module>') == "parsed"
    assert feed(5, opener) == "parsed"  # the traceback it opened has a frame now
    assert feed(6, opener) == "skipped"
    assert feed(7, b"[rank1]: " + HEADER.encode(), rank=1) == "skipped"
    assert feed(8, b"[rank0]: " + HEADER.encode() + b" " * 300) == "parsed"  # too long to be remembered
    assert feed(9, opener) == "parsed"  # rank 0's current traceback is the long line's now
    assert assemblers.skipped == 3


def test_what_is_remembered_stays_bounded():
    sink, assemblers = [], Assemblers()
    for rank in range(tracebacks.MAX_REMEMBERED_OPENERS + 100):
        raw = f"[rank{rank}]: {HEADER}".encode()
        assert not assemblers.repeated(raw)
        assemblers[rank] = TracebackAssembler("x.log", rank, sink)
        assemblers[rank].feed(rank + 1, HEADER, rank + 1, None)
    assert len(assemblers._opened) == tracebacks.MAX_REMEMBERED_OPENERS
