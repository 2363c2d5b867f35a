"""Collective timeouts, NCCL environment and rendezvous fixes."""
from __future__ import annotations

import re

from .common import Edits, evidence_text, is_hf_style

FLIGHT_RECORDER = {
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/tmp/nccl_trace_rank_",
    "NCCL_DEBUG": "INFO",
}


def increase_timeout(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    text = evidence_text(ctx)
    found = re.search(r"Timeout\(ms\)=(\d+)", text)
    old_s = int(found.group(1)) // 1000 if found else 1800
    new_s = max(old_s * 2, 3600)
    notes = [f"collective timeout {old_s} s -> {new_s} s"]
    if is_hf_style(edits.cmd) or not ctx.command:
        edits.set(("ddp_timeout",), new_s)
    else:
        notes.append(f"pass timeout=datetime.timedelta(seconds={new_s}) to torch.distributed.init_process_group "
                     "(accelerate: InitProcessGroupKwargs(timeout=...))")
    for name, value in FLIGHT_RECORDER.items():
        edits.set_env(name, value)
    notes.append("if it times out again, the Flight Recorder dumps (/tmp/nccl_trace_rank_*) show which rank "
                 "never entered the collective: a longer timeout only helps when one rank was merely slow "
                 "(saving, evaluating or preprocessing on rank 0)")
    return edits.fix(
        kind, f"Raise the collective timeout to {new_s} s and record a Flight Recorder dump",
        "The NCCL watchdog killed a collective that waited longer than the timeout; a rank busy with slow work "
        "(preprocessing, checkpointing) needs more time, and the dump tells a hang from a slow rank.",
        notes=notes,
    )


def set_nccl_env(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    text = evidence_text(ctx).lower()
    env = {"NCCL_DEBUG": "INFO"}
    reasons = []
    if re.search(r"net/ib|ibv_|infiniband|\bib\b|mlx5", text):
        env["NCCL_IB_DISABLE"] = "1"
        reasons.append("InfiniBand transport errors: fall back to sockets to confirm")
    if re.search(r"socket|bootstrap|connection (refused|reset)|net/socket|interface", text):
        env["NCCL_SOCKET_IFNAME"] = "eth0"
        reasons.append("socket/bootstrap errors: pin the network interface (check `ip addr` for the right name)")
    if re.search(r"p2p|peer access|peer mapping|unhandled cuda error|cuda error|nvlink|illegal memory", text) or len(env) == 1:
        env["NCCL_P2P_DISABLE"] = "1"
        reasons.append("GPU peer-to-peer transfers fail on many consumer cards and some virtualised hosts")
    for name, value in env.items():
        edits.set_env(name, value)
    return edits.fix(
        kind, "Rerun with NCCL debugging on and the failing transport disabled",
        "NCCL failed inside the communication layer; NCCL_DEBUG=INFO names the transport and the peer, and "
        "disabling the suspect transport confirms it.",
        notes=reasons + ["remove the *_DISABLE variables again once the cause is fixed: they cost bandwidth"],
    )


def fix_rendezvous(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    text = evidence_text(ctx)
    notes = []
    if re.search(r"ssh|exit status 255|hostfile", text, re.I) and cmd.launcher == "deepspeed":
        notes.append("DeepSpeed reaches the other hosts in --hostfile over ssh: set up passwordless ssh between "
                     "them, or drop --hostfile for a single-node run")
        if cmd.flag("hostfile", where="launcher") is not None:
            edits.rw.remove_flag(("hostfile",), where="launcher")
        return edits.fix(kind, "Make the DeepSpeed launcher reach every host", "The launcher never started the "
                         "workers: its ssh check to another host failed.", notes=notes)
    port_keys = {"torchrun": ("master_port",), "deepspeed": ("master_port",), "accelerate": ("main_process_port",)}
    old_port = None
    if cmd.launcher in port_keys:
        old_port = cmd.value(*port_keys[cmd.launcher], where="launcher")
    old_port = old_port or cmd.env.get("MASTER_PORT")
    endpoint = cmd.flag("rdzv_endpoint", where="launcher")
    port = int(old_port) if (old_port or "").isdigit() else 29500
    new_port = port + 1 if port < 65000 else 29501
    if endpoint is not None and endpoint.value and ":" in endpoint.value:
        host = endpoint.value.rsplit(":", 1)[0]
        new_port = int(endpoint.value.rsplit(":", 1)[1]) + 1 if endpoint.value.rsplit(":", 1)[1].isdigit() else new_port
        edits.set(("rdzv_endpoint",), f"{host}:{new_port}", where="launcher")
    elif cmd.launcher in port_keys:
        edits.set(port_keys[cmd.launcher], new_port, where="launcher")
    else:
        edits.set_env("MASTER_PORT", str(new_port))
    nnodes = cmd.value("nnodes", where="launcher")
    if nnodes and nnodes not in ("1", "1:1") and cmd.flag("node_rank", where="launcher") is None and endpoint is None:
        notes.append("--nnodes > 1 needs a distinct --node_rank on every node (0 on the master) and the same "
                     "--master_addr/--master_port everywhere, or --rdzv_backend c10d --rdzv_endpoint HOST:PORT")
    notes.append(f"check the port is free first: ss -ltn | grep :{new_port}  (no output = free); "
                 "a stale job still holding the old one shows up in: ss -ltnp | grep :" + str(port))
    return edits.fix(
        kind, f"Use a free rendezvous port ({port} -> {new_port})",
        "The rendezvous could not bind or reach its address: another job (or a leftover process) holds the "
        "port, or the nodes disagree on where and how many to meet.",
        notes=notes,
    )
