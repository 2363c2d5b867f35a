"""Realistic diagnosis dicts (CONTRACT.md) and log files for page tests, screenshots and the bench.

sample_diagnosis(2) is a torchrun KeyError on rank 1 (rank 0 only got SIGTERM);
sample_diagnosis(256) is a 256-rank FSDP job where rank 137 ran out of GPU memory
and the launcher's "Root Cause" blamed rank 0.
"""
from __future__ import annotations

import math

from tests.factories import make_artifact as add_artifact  # noqa: F401  (kept for the page tests and the bench)

ORIGINAL_COMMAND = ("torchrun --nnodes 32 --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-13b-hf "
                    "--per_device_train_batch_size 8 --gradient_accumulation_steps 1 --bf16 True --fsdp full_shard")
SMALL_COMMAND = "torchrun --nproc_per_node=2 train_tiny.py --per_device_train_batch_size 2 --max_steps 5"


def _rank_events(rank: int, failing: bool, oom: bool, start: float = 0.0) -> list[dict]:
    events = [{"t": start + rank * 0.001, "seq": 1, "kind": "started", "text": f"[rank{rank}]: starting training"}]
    last_step = 41 if failing else 42
    events.append({"t": 95.0 + rank * 0.002, "seq": 200, "kind": "last_progress",
                   "text": f"[rank{rank}]: step {last_step}/1000 loss=1.83"})
    if rank % 64 == 5:
        events.append({"t": 50.0, "seq": 120, "kind": "warning",
                       "text": f"[rank{rank}]: NCCL WARN Call to ibv_reg_mr failed"})
    if failing:
        text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" if oom
                else "KeyError: 'conversations'")
        events.append({"t": 96.5, "seq": 210, "kind": "error", "text": f"[rank{rank}]: {text}"})
        events.append({"t": 97.0, "seq": 220, "kind": "exit", "text": "exitcode: 1"})
    else:
        events.append({"t": 97.2, "seq": 230, "kind": "sigterm", "text": f"Sending process {4000 + rank} closing signal SIGTERM"})
        events.append({"t": 97.4, "seq": 240, "kind": "exit", "text": "exitcode: -15"})
    return events


def _memory_series(ranks: int, failing_rank: int, points: int) -> list[dict]:
    series = []
    for rank in range(ranks):
        peak = 76_500 if rank == failing_rank else 70_000 + (rank % 7) * 600
        curve = []
        for index in range(points):
            t = index * 96.5 / (points - 1)
            value = 20_000 + (peak - 20_000) * (1 - math.exp(-t / 20)) + 900 * math.sin(t * 3 + rank)
            curve.append([round(t, 3), round(min(value, 81_559), 1)])
        series.append({"name": f"rank {rank} GPU {rank % 8} allocated", "rank": rank, "gpu": rank % 8, "unit": "MiB",
                       "kind": "allocated", "points": curve, "capacity": 81_559})
    return series


def sample_diagnosis(ranks: int = 2, *, memory_points: int = 400) -> dict:
    if ranks <= 2:
        failing_rank, oom = 1, False
        return {
            "engine_version": "1.0.0",
            "category": "data_schema",
            "confidence": 0.92,
            "summary": "Rank 1 raised KeyError 'conversations' while reading a training sample: the dataset "
                       "rows are alpaca-style (instruction/output) but the script expects ShareGPT conversations.",
            "launcher": "torchrun",
            "world_size": 2,
            "failing_rank": failing_rank,
            "launcher_root_cause_rank": 0,
            "launcher_verdict_wrong": True,
            "root_cause": {
                "rank": 1, "exception": "KeyError", "message": "'conversations'",
                "frames": [{"file": "/home/user/probe/ddp/train_tiny.py", "line": 31, "function": "__getitem__"}],
                "evidence": [
                    {"source": "log.txt", "line": 6, "text": "[default1]:[rank1]: KeyError: 'conversations'"},
                    {"source": "log.txt", "line": 9, "text": "[default1]:[rank1]:   File \"train_tiny.py\", line 31"},
                ],
            },
            "ranks": [{"rank": r, "status": "failed" if r == failing_rank else "terminated",
                       "exit_code": 1 if r == failing_rank else -15,
                       "events": _rank_events(r, r == failing_rank, oom)} for r in range(2)],
            "fixes": [{
                "kind": "convert_data_format", "title": "Convert the dataset to ShareGPT conversations",
                "why": "Every row has instruction/input/output but the loader reads row['conversations'].",
                "command": SMALL_COMMAND + " --data_path data/train.sharegpt.json",
                "env": {}, "verified": None,
                "changes": [{"file": "data/train.json", "key": "format", "old": "alpaca", "new": "sharegpt"}],
            }],
            "memory": {"series": _memory_series(2, failing_rank, memory_points), "estimate": None},
            "fingerprint": "9f2c1e0a7b3d4c5e",
        }
    failing_rank = 137
    return {
        "engine_version": "1.0.0",
        "category": "gpu_oom",
        "confidence": 0.88,
        "summary": f"Rank {failing_rank} ran out of GPU memory in the backward pass at step 41 "
                   f"(76.5 GiB used of 79.6 GiB); the other {ranks - 1} ranks were then sent SIGTERM.",
        "launcher": "torchrun",
        "world_size": ranks,
        "failing_rank": failing_rank,
        "launcher_root_cause_rank": 0,
        "launcher_verdict_wrong": True,
        "root_cause": {
            "rank": failing_rank, "exception": "OutOfMemoryError",
            "message": "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.65 GiB",
            "frames": [{"file": "train.py", "line": 388, "function": "training_step"},
                       {"file": "torch/autograd/__init__.py", "line": 266, "function": "backward"}],
            "evidence": [
                {"source": "node17.log", "line": 12, "rank": failing_rank,
                 "text": f"[rank{failing_rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
                {"source": "node17.log", "line": 4, "text": f"[rank{failing_rank}]: step 41/1000 loss=1.83"},
            ],
        },
        "ranks": [{"rank": r, "status": "failed" if r == failing_rank else "terminated",
                   "exit_code": 1 if r == failing_rank else -15,
                   "events": _rank_events(r, r == failing_rank, True)} for r in range(ranks)],
        "fixes": [
            {"kind": "enable_gradient_checkpointing", "title": "Turn on gradient checkpointing",
             "why": "Activations take 31 GiB per GPU at batch 8; checkpointing recomputes them in the backward pass.",
             "command": ORIGINAL_COMMAND + " --gradient_checkpointing True",
             "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "verified": True},
            {"kind": "reduce_batch_size", "title": "Halve the per-device batch, double accumulation",
             "why": "Keeps the global batch at 2048 while halving activation memory.",
             "command": ORIGINAL_COMMAND.replace("--per_device_train_batch_size 8", "--per_device_train_batch_size 4")
             .replace("--gradient_accumulation_steps 1", "--gradient_accumulation_steps 2"),
             "env": {}, "verified": None},
        ],
        "memory": {
            "series": _memory_series(ranks, failing_rank, memory_points),
            "estimate": {"components_gib": {"parameters": 3.1, "gradients": 3.1, "optimizer": 12.2,
                                            "activations": 31.4, "buffers": 4.0},
                         "total_gib": 83.8, "capacity_gib": 79.6, "fits": False,
                         "after_fixes": [{"kind": "enable_gradient_checkpointing", "total_gib": 58.2, "fits": True},
                                         {"kind": "reduce_batch_size", "total_gib": 68.1, "fits": True}]},
        },
        "fingerprint": "5b8e7f6a1c2d3e4f",
    }


def two_rank_log() -> str:
    return "\n".join([
        "W1130 15:04:04.562000 21867 torch/distributed/run.py:874] *****************************************",
        "[default0]:[rank0]: starting training",
        "[default1]:[rank1]: starting training",
        "[default1]:[rank1]: Traceback (most recent call last):",
        "[default1]:[rank1]:   File \"train_tiny.py\", line 52, in <module>",
        "[default1]:[rank1]: KeyError: 'conversations'",
        "[default0]:[rank0]: step 3/5 loss=2.1",
        "W1130 15:04:09.100000 21867 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 21903 closing signal SIGTERM",
        "[default1]:[rank1]:   File \"train_tiny.py\", line 31, in __getitem__",
        "E1130 15:04:09.300000 21867 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 0 (local_rank: 0)",
    ]) + "\n"


def node_log(failing_rank: int = 137, extra_lines: int = 0) -> str:
    lines = [f"[rank{r}]: step 41/1000 loss=1.83" for r in range(135, 138)]
    lines.insert(0, "node17 starting 8 workers")
    lines += [f"[rank{failing_rank}]: Traceback (most recent call last):" for _ in range(1)]
    lines += [f"[rank{failing_rank}]:   File \"train.py\", line 388, in training_step"] * 6
    lines += [f"[rank{failing_rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
    lines += [f"[rank{r}]: Sending SIGTERM" for r in range(136, 144)]
    lines += [f"[rank{i % 8 + 136}]: filler line {i}" for i in range(extra_lines)]
    return "\n".join(lines) + "\n"
