"""How many training processes a parsed launch command starts (the data-parallel world)."""
from __future__ import annotations

import re

from .parse import LaunchCommand


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.match(r"^\s*(\d+)(?::(\d+))?\s*$", str(text))
    if not match:
        return None
    return int(match.group(2) or match.group(1))  # elastic "MIN:MAX" -> MAX


def _visible_devices(cmd: LaunchCommand) -> int | None:
    devices = cmd.env.get("CUDA_VISIBLE_DEVICES")
    if not devices:
        return None
    return len([d for d in devices.split(",") if d.strip()])


def world_size(cmd: LaunchCommand) -> tuple[int | None, str]:
    """(processes, how it was derived); (None, reason) when the command cannot tell."""
    nodes = _int(cmd.value("nnodes", "num_nodes", "num_machines", where="launcher")) or 1
    if cmd.launcher == "torchrun":
        per_node = _int(cmd.value("nproc_per_node", where="launcher"))
        if per_node is None:
            per_node = 1 if cmd.flag("nproc_per_node", where="launcher") is None else None
        if per_node is None:
            return None, "--nproc_per_node is not a number"
        return per_node * nodes, f"torchrun: {per_node} per node x {nodes} node(s)"
    if cmd.launcher == "deepspeed":
        per_node = _int(cmd.value("num_gpus", where="launcher"))
        include = cmd.value("include", where="launcher")
        if per_node is None and include:
            hosts = include.split("@")
            per_node = sum(len(h.partition(":")[2].split(",")) if ":" in h else 1 for h in hosts)
            nodes = 1
        per_node = per_node or _visible_devices(cmd)
        if per_node is None:
            return None, "deepspeed uses every visible GPU (count unknown)"
        return per_node * nodes, f"deepspeed: {per_node} GPU(s) x {nodes} node(s)"
    if cmd.launcher == "accelerate":
        processes = _int(cmd.value("num_processes", where="launcher"))
        if processes is None:
            return None, "accelerate takes the process count from its config"
        return processes, f"accelerate: --num_processes {processes}"
    tasks = _int(cmd.value("ntasks", "n", "np", where="wrapper"))
    if tasks:
        return tasks, f"{cmd.wrappers[0] if cmd.wrappers else 'wrapper'}: {tasks} task(s)"
    if cmd.launcher == "python":
        return 1, "a single python process"
    return None, "launcher does not state it"
