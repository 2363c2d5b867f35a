"""The streaming scan: right line numbers across chunks, linear on pathological input, grep and Python agree."""

from __future__ import annotations

import io
import time

import pytest
from triage_helpers import write

from triage import diagnose, grepscan, scan
from triage.scan import LineScanner, compile_literals


def test_it_counts_lines_across_chunk_boundaries(monkeypatch):
    monkeypatch.setattr(scan, "CHUNK", 64)
    text = b"".join(b"line %d ok\n" % index for index in range(500)) + b"KeyError: 'x'\n" + b"tail\n" * 3
    scanner = LineScanner(io.BytesIO(text), compile_literals(["KeyError"]))
    assert list(scanner) == [(501, b"KeyError: 'x'")]
    assert scanner.lines_total == 504


def test_it_hands_out_follow_lines_after_a_candidate():
    scanner = LineScanner(io.BytesIO(b"a\nTraceback here\nb\nc\nd\n"), compile_literals(["Traceback"]))
    out = []
    for lineno, line in scanner:
        out.append(lineno)
        if line.startswith(b"Traceback"):
            scanner.follow = 2
    assert out == [2, 3, 4]


def test_it_stays_linear_on_a_giant_single_line(tmp_path):
    giant = b"x" * (50 * 1024 * 1024) + b" CUDA out of memory. Tried to allocate 2.00 GiB\n"
    log = write(tmp_path / "giant.log", giant)
    start = time.perf_counter()
    result = diagnose([log])
    assert time.perf_counter() - start < 30
    assert result.category == "gpu_oom"
    assert len(result.root_cause.evidence[0].text) <= 4096


def test_it_stays_bounded_with_many_tracebacks(tmp_path):
    block = (
        'Traceback (most recent call last):\n  File "/w/t.py", line 1, in f\n'
        "RuntimeError: [gloo] Connection closed by peer [1.2.3.4]:5\n"
    )
    log = write(tmp_path / "many.log", block * 20000 + "KeyError: 'messages'\n")
    result = diagnose([log])
    assert result.category == "data_schema"
    assert all(len(rank.events) <= 50 for rank in result.ranks)


@pytest.mark.skipif(not grepscan.available(), reason="grep not installed")
def test_it_finds_the_same_lines_with_grep_and_with_python(tmp_path):
    lines = [
        f"[default{index % 4}]: {index}%|## | {index}/100 [00:01<00:09, 1.0it/s]" for index in range(3000)
    ]
    lines[1500] = "[default2]:Traceback (most recent call last):"
    lines[1501] = '[default2]:  File "/w/t.py", line 5, in __getitem__'
    lines[1502] = "[default2]:KeyError: 'conversations'"
    log = write(tmp_path / "g.log", "\n".join(lines) + "\n")
    literals = ["Traceback", "KeyError", 'File "']
    python_lines = list(LineScanner(open(log, "rb"), compile_literals(literals)))
    grep_scanner = grepscan.GrepScanner(str(log), literals)
    grep_lines = list(grep_scanner)
    assert grep_lines == python_lines
    assert grep_scanner.lines_total == 3000


@pytest.mark.skipif(not grepscan.available(), reason="grep not installed")
def test_it_diagnoses_a_big_file_the_same_way_with_grep(tmp_path, monkeypatch):
    log = write(
        tmp_path / "big.log",
        (
            "[default1]: 3%|# | 3/100 [00:01<00:09, 1.0it/s]\n" * 2000
            + "[default1]:torch.cuda.OutOfMemoryError: CUDA out of memory.\n"
            + "[default0]: 4%|# | 4/100 [00:01<00:09, 1.0it/s]\n" * 10
        ),
    )
    monkeypatch.setattr(grepscan, "MIN_SIZE", 0)
    with_grep = diagnose([log])
    monkeypatch.setattr(grepscan, "available", lambda: False)
    without = diagnose([log])
    assert with_grep.category == without.category == "gpu_oom"
    assert with_grep.failing_rank == without.failing_rank == 1
    assert with_grep.root_cause.evidence[0].line == without.root_cause.evidence[0].line == 2001


@pytest.mark.skipif(not grepscan.available(), reason="grep not installed")
def test_it_keeps_line_numbers_right_after_a_giant_line_with_grep(tmp_path, monkeypatch):
    giant = b"progress " * (400_000) + b"Traceback (most recent call last): junk\n"
    log = write(
        tmp_path / "g2.log",
        giant + b'  File "/w/t.py", line 3, in __getitem__\n' + b"KeyError: 'conversations'\n",
    )
    monkeypatch.setattr(grepscan, "MIN_SIZE", 0)
    result = diagnose([log])
    assert result.category == "data_schema"
    assert result.root_cause.evidence[0].line == 3


@pytest.mark.skipif(not grepscan.available(), reason="grep not installed")
def test_it_escapes_regex_characters_in_literals_for_grep(tmp_path):
    literals = ["Error(s) in loading state_dict", "(shm)", "a.b", "x|y", "[rank", "$HOME", "c++", "\\n"]
    text = "plain\nError(s) in loading state_dict for M\naxb\nsee (shm)\nx|y here\nfoo [rank3]: bar\n$HOME\nc++ \\n\nzzz\n"
    log = write(tmp_path / "esc.log", text)
    python_lines = list(LineScanner(open(log, "rb"), compile_literals(literals)))
    assert [line for line, _ in list(grepscan.GrepScanner(str(log), literals))] == [
        line for line, _ in python_lines
    ]
    assert [line for line, _ in python_lines] == [2, 4, 5, 6, 7, 8]


@pytest.mark.skipif(not grepscan.available(), reason="grep not installed")
def test_two_grep_halves_find_the_same_lines_as_one(tmp_path, monkeypatch):
    lines = [
        f"[default{index % 4}]: {index}%|## | {index}/100 [00:01<00:09, 1.0it/s]" for index in range(6000)
    ]
    for at in (10, 2999, 3000, 3001, 5990):  # around the cut near the middle too
        lines[at] = f"[default{at % 4}]:Traceback (most recent call last):"
        lines[at + 1] = f'[default{at % 4}]:  File "/w/t.py", line 5, in __getitem__'
        lines[at + 2] = f"[default{at % 4}]:KeyError: 'conversations' {at}"
    log = write(tmp_path / "halves.log", "\n".join(lines) + "\n")
    literals = ["Traceback", "KeyError", 'File "']
    python_lines = list(LineScanner(open(log, "rb"), compile_literals(literals)))
    monkeypatch.setattr(grepscan, "PARALLEL_MIN", 1)
    monkeypatch.setattr(grepscan, "_cpus", lambda: 2)
    grep_scanner = grepscan.GrepScanner(str(log), literals)
    assert grep_scanner._cut() is not None
    grep_lines = list(grep_scanner)
    assert grep_lines == python_lines
    assert grep_scanner.lines_total == 6000


def test_no_literal_wakes_the_scan_on_the_lines_a_healthy_run_repeats_every_step():
    # a literal that matches a line printed every step (a progress bar, a warning the checkpointing repeats)
    # hands every such line to the collector: a 1 GiB log then takes minutes instead of seconds
    from triage.collect import Collector

    healthy = [
        "[default3]: 41%|████████▏           | 4100/10000 [01:41<10:00,  1.32it/s]",
        "[default3]:{'loss': 1.2345, 'grad_norm': 0.412, 'learning_rate': 2e-05, 'epoch': 0.41}",
        "[default3]:/usr/lib/python3/site-packages/torch/utils/checkpoint.py:61: UserWarning: None of the inputs "
        "have requires_grad=True. Gradients will be None",
        "[default3]:node-0:1234:5678 [3] NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7 via P2P/IPC",
        "[rank3]:[W613 14:50:00.211842 ProcessGroupNCCL.cpp:4598] [PG ID 0 PG GUID 0 Rank 3]  using GPU 3 to "
        "perform barrier as devices used by this process are currently unknown.",
    ]
    pattern = Collector().pattern
    assert [line for line in healthy if pattern.search(line.encode())] == []
