#!/usr/bin/env python3
"""Log viewer on a generated 300 MB multi-rank log: rank-filtered search and paging, through the
line index (jobs/logindex.py) against the scan it replaces, both measured in this run.

    .venv/bin/python bench/logindex_bench.py [--size-mb 300] [--line-by-line]

Two shapes of combined torchrun log, both with one `torch.OutOfMemoryError` on rank 3 near the end:
- "rank 0 chatty": rank 0 prints the progress, ranks 1-7 a line now and then (what a real run
  looks like: the other ranks are quiet until they fail);
- "8 ranks even": every rank prints every 8th line (the worst case for an index of ranks).
For each: the search 'outofmemoryerror' with rank 3 through the block scan (jobs.logfiles without
an index; --line-by-line also runs the reader before the block scan, the issue's 8.3 s), the
one-time index build (what the worker does after a diagnosis), the same search through the
index, then a page of 200 lines at line 2,000,000 and a rank-3 page there, before and after.
Prints seconds; the answers of both paths are asserted equal.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MB = 1024 * 1024


def chatty_block(seed: int) -> bytes:
    lines, step, total = [], seed, 0
    while total < MB:
        if step % 200 == 7:
            rank = 1 + step // 200 % 7
            lines.append(f"[rank{rank}]:[W socket.cpp:464] [c10d] The server socket has failed to listen on [::]:29500\n")
        else:
            lines.append(f"[rank0]:[2026-11-30 21:{step // 600 % 60:02d}:{step % 60:02d}] step {step} loss="
                         f"{2.5 - (step % 1000) / 1000:.4f} lr=2.0e-05 grad_norm=0.{step % 97:02d} tokens/s=1843\n")
        total += len(lines[-1])
        step += 1
    return "".join(lines).encode()


def even_block(seed: int) -> bytes:
    lines, step, total = [], seed, 0
    while total < MB:
        lines.append(f"[rank{step % 8}]:[2026-11-30 21:{step // 600 % 60:02d}:{step % 60:02d}] step {step // 8} loss="
                     f"{2.5 - (step % 1000) / 1000:.4f} lr=2.0e-05 grad_norm=0.{step % 97:02d} tokens/s=1843\n")
        total += len(lines[-1])
        step += 1
    return "".join(lines).encode()


def write_log(path: Path, block, size_mb: int) -> None:
    with open(path, "wb") as handle:
        blocks = [block(n * 7919) for n in range(8)]  # 8 different MiB, repeated
        for n in range(size_mb):
            data = blocks[n % 8]
            handle.write(data[: data.rfind(b"\n") + 1])
            if n == size_mb - 2:
                handle.write(b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--line-by-line", action="store_true",
                        help="also time the line-by-line reader the block scan replaced (slow)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-logindex-"))
    os.environ["TRIAGE_MEDIA_ROOT"] = str(folder / "media")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from jobs import logfiles, logindex

    def without_index(function, *a, **k):
        real = logindex.usable
        logindex.usable = lambda *x, **y: None
        try:
            return timed(function, *a, **k)
        finally:
            logindex.usable = real

    try:
        for shape, block in (("rank 0 chatty", chatty_block), ("8 ranks even", even_block)):
            path = folder / "big.log"
            write_log(path, block, args.size_mb)
            artifact = SimpleNamespace(original_name="big.log",
                                       file=SimpleNamespace(path=str(path), open=lambda mode="rb", path=path: open(path, mode)))
            size = path.stat().st_size / MB
            print(f"== {shape}: {size:.0f} MB log, search 'outofmemoryerror' for rank 3")
            scan, scan_s = without_index(logfiles.search, artifact, "outofmemoryerror", rank=3)
            print(f"  before, block scan (no index):   {scan_s:6.2f} s ({size / scan_s:4.0f} MB/s)")
            if args.line_by_line:
                real = logfiles._local_plain_path
                logfiles._local_plain_path = lambda *a: None
                try:
                    slow, slow_s = without_index(logfiles.search, artifact, "outofmemoryerror", rank=3)
                finally:
                    logfiles._local_plain_path = real
                assert slow.matches == scan.matches
                print(f"  before, line by line:            {slow_s:6.2f} s")
            index, build_s = timed(logindex.build, str(path))
            index_kb = logindex.index_path(str(path)).stat().st_size / 1024
            print(f"  index build (once, by the worker): {build_s:5.2f} s, {index.lines:,} lines, "
                  f"{index_kb:,.0f} KiB on disk")
            found, found_s = timed(logfiles.search, artifact, "outofmemoryerror", rank=3)
            assert found.matches == scan.matches and len(found.matches) == 1, (found.matches, scan.matches)
            print(f"  after, through the index:        {found_s:6.3f} s   ({scan_s / found_s:,.0f}x)")
            line = min(2_000_000, index.lines - 300)
            for rank in (None, 3):
                old, old_s = without_index(logfiles.read_page, artifact, start=line, rank=rank)
                new, new_s = timed(logfiles.read_page, artifact, start=line, rank=rank)
                assert old == new
                label = f"page at line {line:,}" + (" (rank 3 only)" if rank is not None else "")
                print(f"  {label:<34} before {old_s:6.2f} s   after {new_s:6.3f} s")
            logindex.index_path(str(path)).unlink()
            path.unlink()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
