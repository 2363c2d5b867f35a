"""The log viewer's line index (jobs.logindex) answers exactly what the scan answers, pages across
its sample boundaries, stops a search at its byte budget saying where, and is dropped when the
file changes under it (the speed on 300 MB: bench/logindex_bench.py)."""
import os
import random
from types import SimpleNamespace

import pytest

from jobs import logfiles, logindex

RANKS = 6


def artifact_at(path):
    return SimpleNamespace(original_name=path.name,
                           file=SimpleNamespace(path=str(path), open=lambda mode="rb": open(path, mode)))


@pytest.fixture
def small_index(monkeypatch):
    """Index every file, sample every 16 lines, read and build in 4 KiB pieces: many boundaries."""
    monkeypatch.setattr(logindex, "INDEX_MIN_BYTES", 0)
    monkeypatch.setattr(logindex, "STEP", 16)
    monkeypatch.setattr(logindex, "READ_BLOCK", 4096)
    monkeypatch.setattr(logindex, "BUILD_BLOCK", 4096)


def scanned(function, *args, **kwargs):
    """The answer of jobs.logfiles without any index: the reader the index replaces."""
    real = logindex.usable
    logindex.usable = lambda *a, **k: None
    try:
        return function(*args, **kwargs)
    finally:
        logindex.usable = real


def multi_rank_log(rng: random.Random, lines: int = 3000) -> bytes:
    out = []
    for number in range(lines):
        rank = rng.randrange(RANKS)
        style = rng.randrange(10)
        word = rng.choice(["loss 2.1", "NCCL WARN timeout", "CUDA out of memory", "step", "Schlüssel ok"])
        text = f"{number} {word} {'x' * rng.randrange(0, 120)}"
        if style == 0:
            out.append(f"{text}\n")  # no rank at all
        elif style == 1:
            out.append(f"[default{rank}]:[rank{rank}]: {text}\n")
        elif style == 2:
            out.append(f"{rank}: {text}\n")  # srun --label
        elif style == 3:
            out.append(f"[1,{rank}]<stderr>: {text}\n")  # mpirun
        elif style == 4:
            out.append(f"[rank0]: waiting for rank {rank} {text}\n")  # two ranks on one line
        elif style == 5:
            out.append(f" 10%|#    | {number}/900 [rank{rank}]\r 20%|##   | {text}\r\n")  # bars, CRLF
        elif style == 6:
            out.append(f"[rank0{rank}]: leading zero is no rank {text}\n")
        else:
            out.append(f"[rank{rank}]: {text}\n")
    return "".join(out).encode() + b"[rank3]: last line without its end: CUDA OUT of memory"


@pytest.fixture
def log(tmp_path, small_index):
    path = tmp_path / "train.log"
    path.write_bytes(multi_rank_log(random.Random(15)))
    return artifact_at(path)


def test_every_line_of_a_rank_lies_in_a_block_the_index_lists_for_it(log):
    index = logindex.usable(log)
    assert index is not None and index.ranks_complete
    text = open(log.file.path, encoding="utf-8", errors="replace", newline=None).read().splitlines()
    assert index.lines == len(text)
    blocks_with_lines = 0
    for rank in range(RANKS):
        keep = logfiles.rank_matcher(rank)
        needed = {(number - 1) // logindex.STEP for number, line in enumerate(text, start=1) if keep(line + "\n")}
        listed = set(index.rank_blocks(rank))
        assert needed and needed <= listed, rank
        blocks_with_lines += len(needed)
    assert index.rank_blocks(9) == logindex.array("I")  # a rank that never printed: nothing to read


@pytest.mark.parametrize("rank", [None, 0, 3, 5, 9])
def test_pages_match_the_scan_across_sample_boundaries(log, rank, monkeypatch):
    assert logindex.usable(log) is not None
    calls = []
    monkeypatch.setattr(logindex, "read_page", lambda *a, _real=logindex.read_page, **k: calls.append(1) or _real(*a, **k))
    for start in (1, 15, 16, 17, 32, 33, 500, 1999, 2990, 3300, 4000):
        for size in (1, 7, 200):
            fast = logfiles.read_page(log, start=start, rank=rank, highlight=start + 2, query="cuda", size=size)
            slow = scanned(logfiles.read_page, log, start=start, rank=rank, highlight=start + 2, query="cuda",
                           size=size)
            assert fast == slow, (rank, start, size)
    assert len(calls) == 11 * 3  # every page came through the index


@pytest.mark.parametrize("rank", [None, 2])
def test_following_next_start_visits_every_line_of_the_rank_once(log, rank):
    seen, start = [], 1
    while start is not None:
        page = logfiles.read_page(log, start=start, rank=rank, size=37)
        seen += [number for number, _, _ in page.lines]
        start = page.next_start
    expected, start = [], 1
    while start is not None:
        page = scanned(logfiles.read_page, log, start=start, rank=rank, size=500)
        expected += [number for number, _, _ in page.lines]
        start = page.next_start
    assert seen == expected and len(set(seen)) == len(seen)


@pytest.mark.parametrize("query,rank,from_line,limit", [
    ("out of memory", None, 1, 200),
    ("out of memory", 3, 1, 40),
    ("nccl warn", 5, 700, 200),
    ("step", None, 1, 10),
    ("20%|##", 1, 1, 200),  # inside lines split by a lone CR
    ("never there", 1, 1, 200),
    ("waiting for rank", 4, 2500, 200),
])
def test_search_matches_the_scan(log, query, rank, from_line, limit):
    fast = logfiles.search(log, query, rank=rank, from_line=from_line, limit=limit)
    slow = scanned(logfiles.search, log, query, rank=rank, from_line=from_line, limit=limit)
    assert fast.matches == slow.matches
    assert (fast.complete, fast.next_from) == (slow.complete, slow.next_from)


@pytest.mark.parametrize("rank", [None, 3])
def test_a_search_stops_at_its_budget_and_continues_where_it_said(log, rank):
    everything = scanned(logfiles.search, log, "out of memory", rank=rank, limit=10_000)
    found, from_line, rounds = [], 1, 0
    while True:
        rounds += 1
        part = logfiles.search(log, "out of memory", rank=rank, from_line=from_line, byte_budget=20_000)
        found += part.matches
        if part.complete:
            break
        assert part.next_from > from_line  # always progress
        from_line = part.next_from
    assert rounds > 3  # the budget did stop it
    assert found == everything.matches


def test_a_rank_search_reads_only_the_blocks_where_the_rank_printed(tmp_path, small_index):
    chatter = "".join(f"[rank0]: step {n} loss 2.0\n" for n in range(20_000))
    path = tmp_path / "sparse.log"
    path.write_text(chatter + "[rank7]: torch.OutOfMemoryError: CUDA out of memory\n" + chatter)
    log = artifact_at(path)
    budget = 2 * 4096  # far less than the file: rank 7 lives in one block
    result = logfiles.search(log, "outofmemoryerror", rank=7, byte_budget=budget)
    assert result.complete and [number for number, _ in result.matches] == [20_001]
    assert not logfiles.search(log, "outofmemoryerror", byte_budget=budget).complete  # no rank: must scan


def test_a_truncated_or_rewritten_file_invalidates_its_index(log):
    path = log.file.path
    assert logindex.usable(log).lines > 3000
    assert logindex.load(path) is not None

    data = open(path, "rb").read()
    with open(path, "r+b") as handle:  # truncated
        handle.truncate(len(data) // 2)
    assert logindex.load(path) is None
    fresh = logindex.usable(log)
    assert fresh is not None and fresh.lines < 2000
    page = logfiles.read_page(log, start=1000, rank=3)
    assert page == scanned(logfiles.read_page, log, start=1000, rank=3)

    stat = os.stat(path)  # rewritten: same size, same mtime, other bytes
    half = open(path, "rb").read()
    with open(path, "wb") as handle:
        handle.write(half.replace(b"[rank3]", b"[rank4]"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.path.getsize(path) == stat.st_size
    assert logindex.load(path) is None
    assert logindex.usable(log) is not None  # rebuilt for the new bytes
    for rank in (3, 4):
        assert logfiles.read_page(log, start=1, rank=rank, size=500) == scanned(
            logfiles.read_page, log, start=1, rank=rank, size=500)


def test_small_files_archives_and_members_keep_the_scan(tmp_path, monkeypatch):
    path = tmp_path / "small.log"
    path.write_text("[rank1]: hello\n")
    assert logindex.usable(artifact_at(path)) is None  # under INDEX_MIN_BYTES
    monkeypatch.setattr(logindex, "INDEX_MIN_BYTES", 0)
    assert logindex.usable(artifact_at(path), member="logs/0/stdout.log") is None
    gz = tmp_path / "rank0.log.gz"
    gz.write_bytes(b"\x1f\x8b")
    assert logindex.usable(artifact_at(gz)) is None


def test_the_first_page_does_not_build_an_index_but_a_rank_filter_does(log):
    assert logindex.load(log.file.path) is None
    logfiles.read_page(log, start=1)
    assert logindex.load(log.file.path) is None
    logfiles.read_page(log, start=1, rank=2)
    assert logindex.load(log.file.path) is not None


def test_the_sweep_removes_indexes_of_deleted_logs(log, tmp_path):
    logindex.usable(log)
    other = tmp_path / "other.log"
    other.write_bytes(multi_rank_log(random.Random(1), 200))
    logindex.usable(artifact_at(other))
    assert len(list(logindex.index_root().glob("*.idx"))) == 2
    os.unlink(log.file.path)
    assert logindex.sweep_stale() == 1
    assert [p.name for p in logindex.index_root().glob("*.idx")] == [logindex.index_path(str(other)).name]


def test_the_worker_indexes_large_logs_and_the_viewer_uses_them(alice_client, alpha, make_incident, monkeypatch):
    from django.urls import reverse

    from tests.factories import make_artifact

    monkeypatch.setattr(logindex, "INDEX_MIN_BYTES", 50_000)
    monkeypatch.setattr(logindex, "STEP", 16)
    incident = make_incident(alpha)
    big = make_artifact(incident, "train.log", multi_rank_log(random.Random(2), 2000))
    small = make_artifact(incident, "small.log", "[rank1]: hi\n")
    assert logindex.build_for_incident(incident.pk) == 1
    assert logindex.load(big.file.path) is not None and logindex.load(small.file.path) is None
    assert logindex.build_for_incident(incident.pk) == 0  # still valid: not rebuilt

    url = reverse("jobs:artifact_log", args=[incident.pk, big.pk])
    response = alice_client.get(url, {"rank": 3, "q": "out of memory", "start": 900})
    page, results = response.context["page"], response.context["results"]
    assert page == scanned(logfiles.read_page, big, start=900, rank=3, query="out of memory")
    assert results.matches == scanned(logfiles.search, big, "out of memory", rank=3).matches
