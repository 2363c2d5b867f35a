"""The log viewer's block scan finds exactly what the line-by-line search finds (its speed: bench)."""
import random
from types import SimpleNamespace

import pytest

from jobs import logfiles


def artifact_at(path):
    return SimpleNamespace(original_name=path.name,
                           file=SimpleNamespace(path=str(path), open=lambda mode="rb": open(path, mode)))


def slow_search(artifact, *args, **kwargs):
    real = logfiles._local_plain_path
    logfiles._local_plain_path = lambda *a: None
    try:
        return logfiles.search(artifact, *args, **kwargs)
    finally:
        logfiles._local_plain_path = real


@pytest.fixture
def log(tmp_path, monkeypatch):
    monkeypatch.setattr(logfiles, "SCAN_BLOCK", 4096)  # many blocks, lines across their edges
    rng = random.Random(7)
    lines = []
    for number in range(20_000):
        rank = rng.randrange(8)
        word = rng.choice(["loss", "NCCL WARN timeout", "CUDA out of memory", "step", "Schlüssel ok"])
        lines.append(f"[rank{rank}]: {number} {word} {'x' * rng.randrange(0, 300)}\n")
    path = tmp_path / "train.log"
    path.write_text("".join(lines) + "[rank3]: last line without newline cuda OUT of memory")
    return artifact_at(path)


@pytest.mark.parametrize("query,rank,from_line,limit,budget", [
    ("out of memory", None, 1, 200, 10**9),
    ("out of memory", 3, 1, 50, 10**9),
    ("nccl warn", 5, 7_000, 200, 10**9),
    ("step", None, 1, 200, 200_000),
    ("ü ok", None, 1, 10, 10**9),  # not ASCII: the line-by-line path
    ("never there", 1, 1, 200, 10**9),
])
def test_the_block_scan_matches_the_line_by_line_search(log, query, rank, from_line, limit, budget):
    fast = logfiles.search(log, query, rank=rank, from_line=from_line, limit=limit, byte_budget=budget)
    slow = slow_search(log, query, rank=rank, from_line=from_line, limit=limit, byte_budget=budget)
    assert fast.matches == slow.matches
    assert fast.complete == slow.complete
    if budget > 10**8:
        assert fast.next_from == slow.next_from


def test_a_file_with_carriage_returns_keeps_the_page_readers_line_numbers(tmp_path):
    path = tmp_path / "bar.log"
    path.write_bytes(b"10%|#\r20%|##\rError: boom\nnext\nError: again\n")
    artifact = artifact_at(path)
    assert logfiles.search(artifact, "error").matches == slow_search(artifact, "error").matches
