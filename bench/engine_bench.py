"""Benchmark the diagnosis engine against grep on a large multi-rank log.

Builds var/bench/bench.log (default ~1 GiB; --size-mb to change) where a real failure (rank 3
runs out of GPU memory, the others get NCCL cascades and SIGTERM) is buried in progress bars,
warnings and NCCL INFO chatter; times `grep -E` with a comparable alternation over the same
file, times `python -m triage diagnose --json` on it, prints the ratio and the engine's peak RSS.

    python bench/engine_bench.py --size-mb 64
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GREP_ALTERNATION = (
    "Traceback|Error|error|Exception|Killed|SIGTERM|exitcode|Watchdog|NCCL WARN|out of memory|"
    "Root Cause|Failures:|oom-kill|return code|srun: error"
)
RANKS = 8


def noise_block(rng: random.Random, step: int, total: int) -> str:
    lines = []
    for rank in range(RANKS):
        pct = step * 100 // total
        lines.append(
            f"[default{rank}]:{pct:3d}%|{'█' * (pct // 5):<20}| {step}/{total} [01:{step % 60:02d}<10:00, "
            f" 1.{rng.randint(10, 99)}it/s]\r"
        )
        if step % 7 == 0:
            lines.append(
                f"[default{rank}]:{{'loss': {rng.random() * 2:.4f}, 'grad_norm': {rng.random():.3f}, "
                f"'learning_rate': 2e-05, 'epoch': {step / total:.2f}}}"
            )
        if step % 13 == 0:
            lines.append(
                f"[default{rank}]:/usr/lib/python3/site-packages/torch/utils/checkpoint.py:61: UserWarning: "
                f"None of the inputs have requires_grad=True. Gradients will be None"
            )
        if step % 29 == 0:
            lines.append(
                f"[default{rank}]:node-{rank // 4}:1234:5678 [{rank % 4}] NCCL INFO Channel 00/02 : "
                f"0 1 2 3 4 5 6 7 via P2P/IPC"
            )
    return "\n".join(lines) + "\n"


FAILURE = """[default3]:Traceback (most recent call last):
[default3]:  File "/home/user/train.py", line 210, in <module>
[default3]:    trainer.train()
[default3]:  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
[default3]:    return forward_call(*args, **kwargs)
[default3]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.15 GiB total capacity; 75.10 GiB already allocated; 1.20 GiB free; 77.00 GiB reserved in total by PyTorch)
[default0]:RuntimeError: NCCL communicator was aborted on rank 0. Original reason for failure was: [Rank 0] Watchdog caught collective operation timeout
W1130 15:04:29.411000 22091 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 22095 closing signal SIGTERM
E1130 15:04:29.429000 22091 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 3 (pid: 22094) of binary: /usr/bin/python3
"""


def build(path: Path, size_mb: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        written, step, total = 0, 0, 10**7
        failure_at = target * 2 // 3
        placed = False
        while written < target:
            block = noise_block(rng, step, total)
            handle.write(block)
            written += len(block.encode())
            step += 1
            if not placed and written >= failure_at:
                handle.write(FAILURE)
                placed = True
        if not placed:
            handle.write(FAILURE)


def timed(command: list[str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before), proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--out", default=str(ROOT / "var" / "bench" / "bench.log"))
    parser.add_argument("--keep", action="store_true", help="reuse an existing file of the right size")
    args = parser.parse_args()
    path = Path(args.out)
    if not (args.keep and path.exists()):
        print(f"building {path} ({args.size_mb} MiB)...", flush=True)
        build(path, args.size_mb)
    size = path.stat().st_size
    grep_s, _, _ = timed(["grep", "-E", "-c", GREP_ALTERNATION, str(path)])
    engine_s, engine_rss_kb, out = timed([sys.executable, "-m", "triage", "diagnose", "--json", str(path)])
    diagnosis = json.loads(out) if out.strip() else {}
    print(f"file: {size / 2**20:.0f} MiB")
    print(f"grep -E: {grep_s:.2f}s")
    print(f"triage: {engine_s:.2f}s  peak RSS {engine_rss_kb / 1024:.0f} MiB")
    print(f"ratio: {engine_s / max(grep_s, 1e-6):.2f}x")
    print(
        f"verdict: {diagnosis.get('category')} rank {diagnosis.get('failing_rank')} "
        f"{(diagnosis.get('root_cause') or {}).get('exception')}"
    )
    ok = diagnosis.get("category") == "gpu_oom" and diagnosis.get("failing_rank") == 3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
