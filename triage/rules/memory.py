"""Memory exhaustion: accelerator (gpu_oom) and host RAM (host_oom)."""

from __future__ import annotations

import re

from triage.rules import CONFIRMATION, HINT, ROOT, rule

GPU_FIXES = ["reduce_batch_size", "enable_gradient_checkpointing", "shard_more", "increase_grad_accum"]
# fewer DataLoader workers comes first only when the log shows workers (triage.pipeline orders by evidence)
HOST_FIXES = ["fix_config", "reduce_batch_size", "reduce_dataloader_workers"]


def _tried(match: re.Match) -> dict:
    out = {}
    found = re.search(r"Tried to allocate ([\d.]+ [KMGT]i?B)", match.string)
    if found:
        out["tried_to_allocate"] = found.group(1)
    device = re.search(r"\(GPU (\d+);|GPU (\d+) has a total capacity", match.string)
    if device:
        out["device_index"] = int(device.group(1) or device.group(2))
    # other processes holding gigabytes on the same GPU ("Process 22817 has 30.02 GiB memory in use"): where
    # several do, the job's ranks share the GPU (triage.pipeline puts the device placement first)
    others = [float(size) for size in _OTHER_PROCESS.findall(match.string)]
    if others:
        # (where the message has no "this process has ..." of its own, the failing process is one of the list)
        own = 0 if "this process has" in match.string else 1
        out["other_processes"] = max(sum(1 for size in others if size >= 1.0) - own, 0)
    return out


_OTHER_PROCESS = re.compile(r"Process \d{1,9} has ([\d.]{1,8}) GiB memory in use")


_REQUEST = re.compile(r"tried to allocate (\d+) bytes|Unable to allocate ([\d.]+) ([KMGT]?)i?B")
_UNIT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _requested_bytes(text: str) -> dict:
    """The size of the one allocation the host refused ("you tried to allocate 8028160000 bytes")."""
    found = _REQUEST.search(text)
    if found is None:
        return {}
    if found.group(1):
        return {"bytes": int(found.group(1))}
    return {"bytes": int(float(found.group(2)) * _UNIT[found.group(3)])}


RULES = [
    rule(
        "memory.cpu_offload_on",
        "host_oom",
        HINT,
        ["offload", "Offload"],
        # the job keeps optimizer states or parameters in host RAM (DeepSpeed's printed config, its "CPU Offload:
        # True", FSDP's cpu offload, a framework's offload option): read with a host OOM, that is what filled it
        r"['\"]offload_(?:optimizer|param)['\"]:\s*\{['\"]device['\"]:\s*['\"](?:cpu|nvme)|CPU Offload: True|"
        r"\b(?:param|optimizer)_offload=True|offload_(?:optimizer|param)=(?:cpu|nvme)|\bcpu_offload[=:]\s*True|"
        r"(?:\b|_)ds_?z?[23]_offload|(?:\b|_)zero_?[23][-_]offload|\s--offload\b|offload_(?:optimizer|param)\((?:cpu|nvme)\)",
        ["fix_config", "shard_more"],
        0.05,
        "the job offloads optimizer states or parameters to host RAM",
    ),
    rule(
        "memory.ray_memory_monitor",
        "host_oom",
        ROOT,
        ["memory pressure", "running low on memory", "where the task ("],
        # (its detail line names the killed worker's pid: "Memory on the node (IP: ...) where the task (actor
        # ID: ..., pid=48123, memory used=58GB) was running was 240G / 251G")
        r"killed due to memory pressure \(OOM\)|[Tt]ask was killed due to the node running low on memory|"
        r"Memory on the node \(IP: [^)]{1,120}\) where the task \(",
        ["reduce_batch_size", "reduce_dataloader_workers", "fix_config"],
        0.9,
        "Ray's memory monitor killed a worker: the node's host RAM ran low",
    ),
    rule(
        "memory.cuda_oom",
        "gpu_oom",
        ROOT,
        ["out of memory", "OutOfMemoryError", "Out of memory", "OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED"],
        r"(?:CUDA|HIP|XPU|MPS|NPU)(?: backend)? out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|"
        r"Cuda failure (?:\d{1,3} )?'out of memory'|"
        r"RESOURCE_EXHAUSTED: Out of memory|CUDA error: out of memory",
        GPU_FIXES,
        0.9,
        "the GPU ran out of memory",
        facts=_tried,
    ),
    rule(
        "memory.kv_cache_blocks",
        "gpu_oom",
        ROOT,
        ["No available memory for the cache blocks", "KV cache"],
        # vLLM (a rollout engine inside an RL trainer) found no GPU memory left for its KV cache after the
        # model: its memory share, or what the training side holds on the same GPU, must change
        r"No available memory for the cache blocks|"
        r"(?:not enough|insufficient|no) (?:GPU |free )?memory (?:left )?(?:for|to allocate) (?:the )?KV cache",
        ["fix_config", "shard_more", "reduce_batch_size"],
        0.85,
        "the inference engine found no GPU memory left for its KV cache (gpu_memory_utilization, colocated "
        "training, tensor parallel size)",
    ),
    rule(
        "memory.host_alloc",
        "host_oom",
        ROOT,
        ["Cannot allocate memory", "bad_alloc", "MemoryError", "Unable to allocate", "DefaultCPUAllocator",
         "memory allocation of"],
        # (Rust code, a fast tokenizer, aborts with "memory allocation of N bytes failed")
        r"\[Errno 12\] Cannot allocate memory|std::bad_alloc|^(?:\w+\.)*MemoryError\b|"
        r"Unable to allocate [\d.]+ [KMGT]i?B|DefaultCPUAllocator: (?:not enough memory|can't allocate memory)|"
        r"^memory allocation of \d+ bytes failed",
        HOST_FIXES,
        0.8,
        "the host ran out of RAM",
        facts=lambda match: _requested_bytes(match.string),
    ),
    rule(
        "memory.kernel_oom_killer",
        "host_oom",
        CONFIRMATION,
        ["oom_kill", "oom-kill", "Out of memory: Kill", "Killed process", "oom-killer"],
        r"oom_kill event|oom-kill|Out of memory: Kill|Killed process \d+|invoked oom-killer",
        HOST_FIXES,
        0.85,
        "the kernel OOM killer ended a training process",
    ),
    rule(
        "memory.container_oom_killed",
        "host_oom",
        ROOT,
        ["OOMKilled", "low on resource: memory"],
        # Kubernetes: the container hit its memory limit (its last state "Terminated, Reason: OOMKilled"), or
        # the kubelet evicted the pod because the node ran low on memory
        r"\bOOMKilled\b|low on resource: memory\b",
        HOST_FIXES,
        0.9,  # the orchestrator's own record: the pod's processes vanished, the peers' errors follow
        "the container ran out of its memory limit (OOMKilled) or the node evicted the pod for memory",
    ),
    rule(
        "memory.launcher_killing",
        "host_oom",
        HINT,
        ["Killing subprocess"],
        r"Killing subprocess \d+",
        HOST_FIXES,
        0.3,
        "the launcher killed its workers after one died without a Python error",
    ),
    rule(
        "memory.bare_killed",
        "host_oom",
        ROOT,
        ["Killed"],
        r"^\s*Killed\s*$|\bline \d+:\s+\d+ Killed\b",
        HOST_FIXES,
        0.45,
        "a process was killed (SIGKILL), most often by the host's OOM killer",
    ),
    rule(
        "memory.notebook_kernel_died",
        "host_oom",
        ROOT,
        ["Kernel crashed", "kernel process died", "kernel appears to have died", "Kernel Restarting",
         "kernel died", "session crashed", "KernelRestarter: restarting"],
        # a notebook's kernel process vanishing without a Python error: the host's OOM killer, almost always
        # while a model is loaded or moved (Jupyter, VS Code's Jupyter, Colab and Kaggle print these; Colab
        # says outright "Your session crashed after using all available RAM")
        r"The Kernel crashed while executing code|kernel process died|[Tt]he kernel appears to have died|"
        r"Kernel Restarting|[Kk]ernel died(?: unexpectedly)?|session crashed after using all available RAM|"
        r"KernelRestarter: restarting kernel",
        ["fix_config", "reduce_batch_size"],
        0.5,
        "the notebook's kernel process died without a Python error: most often the host ran out of RAM (the "
        "OOM killer), e.g. while a model's weights were loaded in full precision",
    ),
]
