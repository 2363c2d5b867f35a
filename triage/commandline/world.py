"""How many training processes a parsed launch command starts (the data-parallel world).

`launch_shape(cmd)` reads what the command states: processes per node, nodes, and whether the
figure is stated or only the launcher's default (bare `torchrun` starts 1 process a node;
`deepspeed` and `accelerate` take every visible GPU or their config). `job_world(cmd, seen)`
reconciles it with the ranks the logs show: a stated size stands unless the logs show more ranks
(then the logs win: the command is not the whole story), a default or unknown size yields to them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .parse import LaunchCommand


@dataclass
class LaunchShape:
    per_node: int | None
    nodes: int
    stated: bool  # False: a launcher default or nothing at all
    how: str

    @property
    def world(self) -> int | None:
        return self.per_node * self.nodes if self.per_node else None


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


def launch_shape(cmd: LaunchCommand) -> LaunchShape:
    nodes = _int(cmd.value("nnodes", "num_nodes", "num_machines", where="launcher")) or 1
    if cmd.launcher == "torchrun":
        flag = cmd.flag("nproc_per_node", "nproc-per-node", where="launcher")
        per_node = _int(flag.value) if flag else None
        if flag is None:
            return LaunchShape(1, nodes, False, f"torchrun without --nproc_per_node: 1 per node x {nodes} node(s)")
        if per_node is None:  # "gpu", "auto": as many as the node has
            return LaunchShape(None, nodes, False, f"--nproc_per_node {flag.value}: count unknown")
        return LaunchShape(per_node, nodes, True, f"torchrun: {per_node} per node x {nodes} node(s)")
    if cmd.launcher == "deepspeed":
        per_node = _int(cmd.value("num_gpus", where="launcher"))
        include = cmd.value("include", where="launcher")
        if per_node is None and include:
            hosts = include.split("@")
            per_node = sum(len(h.partition(":")[2].split(",")) if ":" in h else 1 for h in hosts)
            nodes = 1
        per_node = per_node or _visible_devices(cmd)
        if per_node is None:
            return LaunchShape(None, nodes, False, "deepspeed uses every visible GPU (count unknown)")
        return LaunchShape(per_node, nodes, True, f"deepspeed: {per_node} GPU(s) x {nodes} node(s)")
    if cmd.launcher == "accelerate":
        processes = _int(cmd.value("num_processes", where="launcher"))
        if processes is None:
            return LaunchShape(None, 1, False, "accelerate takes the process count from its config")
        return LaunchShape(processes, 1, True, f"accelerate: --num_processes {processes}")
    tasks = _int(cmd.value("ntasks", "n", "np", where="wrapper"))
    if tasks:
        wrapper = next((w for w in cmd.wrappers if w not in ("env", "docker", "podman")), "wrapper")
        return LaunchShape(tasks, 1, True, f"{wrapper}: {tasks} task(s)")
    if cmd.launcher == "python" and not set(cmd.wrappers) & {"srun", "mpirun", "mpiexec", "salloc", "sbatch"}:
        return LaunchShape(1, 1, True, "a single python process")
    return LaunchShape(None, 1, False, "launcher does not state it")


def with_launcher_config(shape: LaunchShape | None, cmd: LaunchCommand | None, configs: dict) -> LaunchShape | None:
    """`accelerate launch --config_file x.yaml` states no count on its line: the config it names does
    (`num_processes`, every machine's processes, over `num_machines`). Used when that config was uploaded
    and the command (or no command at all) leaves the count to it."""
    if shape is not None and (shape.stated or cmd is None or cmd.launcher != "accelerate"):
        return shape
    for config in configs.values():
        if not isinstance(config, dict) or "distributed_type" not in config:
            continue
        processes = _int(str(config.get("num_processes", "")))
        machines = _int(str(config.get("num_machines", 1))) or 1
        if processes and processes % machines == 0:
            return LaunchShape(processes // machines, machines, True,
                               f"accelerate config: num_processes {processes} over {machines} machine(s)")
    return shape


def world_size(cmd: LaunchCommand) -> tuple[int | None, str]:
    """(processes, how it was derived) as the command states them; (None, reason) when it cannot tell.
    A launcher default (bare torchrun: 1) counts: use job_world to weigh it against the logs."""
    shape = launch_shape(cmd)
    return shape.world, shape.how


def job_world(cmd: LaunchCommand, ranks_seen: int | None) -> tuple[int | None, str]:
    """The world size, the command's figure reconciled with the number of ranks the logs show."""
    shape = launch_shape(cmd)
    if ranks_seen and (shape.world is None or not shape.stated or ranks_seen > shape.world):
        reason = "the command does not state it" if shape.world is None else (
            f"the command's {shape.world} is only the launcher default" if not shape.stated
            else f"more than the command's {shape.world}")
        return ranks_seen, f"{ranks_seen} rank(s) seen in the logs ({reason})"
    return shape.world, shape.how


def node_offset(cmd: LaunchCommand) -> int:
    """The global rank of this node's local rank 0, where one node's launch states its node rank
    (`torchrun --node_rank 1 --nproc_per_node 8`, `accelerate launch --machine_rank 1 --num_machines 2
    --num_processes 16`): its launcher reports local ranks, and local rank 3 there is global rank 11."""
    node = _int(cmd.value("node_rank", "node-rank", "machine_rank", where="launcher"))
    if not node:
        return 0
    shape = launch_shape(cmd)
    if not shape.stated or not shape.per_node:
        return 0
    per_node = shape.per_node
    if cmd.launcher == "accelerate":  # its --num_processes counts every machine's processes
        machines = _int(cmd.value("num_machines", where="launcher")) or 1
        if machines < 2 or per_node % machines:
            return 0
        per_node //= machines
    return node * per_node


def srun_per_node(script) -> bool:
    """srun starts a launcher (torchrun, accelerate, deepspeed) on each node: its task labels and `task N` lines
    then name nodes, not ranks."""
    return any("srun" in cmd.wrappers and cmd.launcher in ("torchrun", "accelerate", "deepspeed")
               for cmd in script.launches)


def node_layout(script) -> dict[int, tuple[int, int]] | None:
    """One torchrun line per node (`--node_rank N`), with their own process counts: {node: (first global
    rank, processes)}. None unless at least two nodes' lines state both."""
    per_node: dict[int, int] = {}
    for cmd in script.launches:
        if cmd.launcher != "torchrun":
            continue
        node = _int(cmd.value("node_rank", "node-rank", where="launcher"))
        shape = launch_shape(cmd)
        if node is None or not shape.stated or not shape.per_node:
            return None
        per_node[node] = shape.per_node
    if len(per_node) < 2:
        return None
    layout, offset = {}, 0
    for node in sorted(per_node):
        layout[node] = (offset, per_node[node])
        offset += per_node[node]
    return layout
