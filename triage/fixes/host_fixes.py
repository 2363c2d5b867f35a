"""Host-side fixes: DataLoader / preprocessing workers, /dev/shm, host RAM while loading."""
from __future__ import annotations

import re

from .common import Edits, as_int, deepspeed_config, is_hf_style, training_configs, zero_offloads

WORKER_KEYS = ("dataloader_num_workers", "preprocessing_num_workers", "num_workers", "num_proc",
               "dataset_num_proc", "dataset_processes", "workers", "workers_per_gpu", "nthreads", "n_threads")
# a config override given as a flag's value (mmcv's `--cfg-options data.workers_per_gpu=8`)
_OVERRIDE = re.compile(r"^([\w.]*(?:workers_per_gpu|num_workers))=(\d+)$")


def reduce_workers(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    to_zero = ctx.category in ("dataloader_worker",)
    notes, changed = [], False
    flags = [f for f in cmd.script_flags
             if f.key in WORKER_KEYS or f.key.endswith((".num_workers", ".workers_per_gpu"))]
    for flag in cmd.script_flags:
        override = _OVERRIDE.match(str(flag.value or ""))
        current = as_int(override.group(2)) if override else None
        if current:
            new = 0 if to_zero else max(current // 2, 0)
            edits.rw.set_flag((flag.key,), f"{override.group(1)}={new}")
            notes.append(f"{override.group(1)} {current} -> {new}")
            changed = True
    for flag in flags:
        current = as_int(flag.value)
        if current is None or current == 0:
            continue
        new = 0 if (to_zero and "preprocess" not in flag.key) else max(current // 2, 1 if "proc" in flag.key else 0)
        edits.rw.set_flag((flag.key,), new)
        notes.append(f"{flag.name} {current} -> {new}")
        changed = True
    for name, conf in training_configs(ctx):
        for key in WORKER_KEYS:
            current = as_int(str(conf.get(key))) if key in conf else None
            if current:
                new = 0 if to_zero and "preprocess" not in key else max(current // 2, 1 if "proc" in key else 0)
                edits.patch_config(name, key, new)
                changed = True
    zero = [f.name for f in flags if as_int(f.value) == 0]
    if not changed and zero:
        notes.append(f"{', '.join(zero)} already 0: batches load in the main process")
        return edits.fix(kind, "DataLoader workers are already 0", "Nothing left to cut in the workers.",
                         notes=notes, applicable=False, ruled_out=f"{zero[0]} is already 0")
    if not changed:
        if is_hf_style(cmd, ctx) or not ctx.command:
            edits.set(("dataloader_num_workers",), 0)
            notes.append("no worker count was set: load batches in the main process (HF default is 0 workers) "
                         "and keep dataset preprocessing to a single process")
        else:
            notes.append("set the DataLoader's num_workers=0 (or a small number) in the script or its config, "
                         "e.g. training.num_workers=0 for MMF/Hydra-style configs")
    why = ("Every DataLoader worker and preprocessing process holds its own copy of the dataset slice and "
           "its batches in host RAM and /dev/shm; fewer workers use less of both.")
    return edits.fix(kind, "Use fewer DataLoader / preprocessing workers", why, notes=notes, cost="medium")


def increase_shm(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    tokens = edits.cmd.line.tokens
    run = next((i for i, t in enumerate(tokens[:-1]) if t.value == "docker" and tokens[i + 1].value == "run"), None)
    if run is not None and not any(t.value.startswith("--shm-size") for t in tokens):
        edits.rw.before[run + 2 if run + 2 < len(tokens) else run + 1] += "--shm-size=16g "
        edits.rw.changes.append({"where": "launcher", "flag": "--shm-size", "old": None, "new": "16g"})
    return edits.fix(
        kind, "Give the container a larger /dev/shm (e.g. 16 GiB)",
        "DataLoader workers pass batches through shared memory; Docker's default /dev/shm is 64 MiB, so "
        "workers die with a bus error once batches outgrow it.",
        notes=["docker run --shm-size=16g ... (or --ipc=host)",
               "Kubernetes: mount an emptyDir with medium: Memory at /dev/shm",
               "check the size with: df -h /dev/shm"],
        shell=["df -h /dev/shm"], cost="low",
    )


def host_memory(ctx, kind: str) -> dict:
    """host_oom seen as a settings problem: every rank loading the full model into host RAM at once."""
    edits = Edits(ctx)
    cmd = edits.cmd
    notes = []
    ds_name, ds = deepspeed_config(ctx, cmd)
    offloaded = [key for key, device in zero_offloads(ds).items() if device in ("cpu", "nvme")]
    if offloaded and ds_name:
        for key in offloaded:
            edits.patch_config(ds_name, f"zero_optimization.{key}.pin_memory", False)
        notes.append("CPU offload keeps optimizer/parameter copies in pinned host RAM; unpinned pages can be swapped")
    if (offloaded and ds_name) or (ctx.facts or {}).get("offload_shown"):
        # the job keeps optimizer states (and parameters) in host RAM: that setting is what to change first
        if not offloaded:
            notes.append(f"the job offloads to host RAM ({ds_name or 'its DeepSpeed / FSDP settings'}): set "
                         "offload_optimizer / offload_param device to none (or FSDP cpu_offload off)")
        notes += ["ZeRO-3 without offload shards optimizer states and parameters across the GPUs instead of "
                  "keeping them in host RAM; or run fewer processes per node, or a node with more RAM",
                  "the final save gathers the whole model in host RAM too: stage3_gather_16bit_weights_on_model_save "
                  "false saves shards instead",
                  "while loading, from_pretrained(..., low_cpu_mem_usage=True) keeps each rank from building a full "
                  "copy in host RAM first"]
        return edits.fix(
            kind, "Offload less to host RAM (or give each node more)",
            "The job keeps optimizer states and parameters in host RAM (CPU offload), and host RAM ran out.",
            notes=notes, cost="medium")
    if cmd.flag("low_cpu_mem_usage") is not None:
        edits.set(("low_cpu_mem_usage",), True)
    notes += [
        "load the model with from_pretrained(..., low_cpu_mem_usage=True) (or device_map) so each rank does not "
        "build a full fp32 copy in host RAM first",
        "stagger loading: let ranks load one node-local rank at a time (e.g. for r in range(local_world_size): "
        "if local_rank == r: load(); torch.distributed.barrier())",
        "or start fewer processes per node, or give the node/container more RAM",
    ]
    return edits.fix(
        kind, "Load the model with less host RAM per process",
        "The processes were killed by the kernel while host RAM ran out; N ranks each materialising the whole "
        "checkpoint in RAM need N times the model size at once.",
        notes=notes, cost="medium",
    )
