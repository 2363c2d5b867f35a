"""Collective timeouts, NCCL environment and rendezvous fixes."""
from __future__ import annotations

import re

from triage.rules.exceptions import LAUNCHER_VARIABLES

from .common import Edits, evidence_text, lookup

FLIGHT_RECORDER = {
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/tmp/nccl_trace_rank_",
    "NCCL_DEBUG": "INFO",
}


TIMEOUT_PATTERNS = (
    (r"Timeout\(ms\)\s*=\s*(\d+)", 0.001),
    (r"timed? ?out after (\d+(?:\.\d+)?) ?(?:ms|milliseconds)", 0.001),
    (r"timeout(?:=|: |\s+of\s+)(\d+):(\d\d):(\d\d)", None),  # timedelta text 0:00:12
    (r"timed? ?out after (\d+(?:\.\d+)?) ?(?:s|sec|seconds)\b", 1.0),
)
UNIT_SECONDS = {"ms": 0.001, "millis": 0.001, "s": 1, "sec": 1, "secs": 1, "seconds": 1, "minutes": 60, "mins": 60,
                "min": 60, "hours": 3600, "hour": 3600, "h": 3600}


def timeout_from_log(text: str) -> float | None:
    """The collective timeout that fired, in seconds, as the log states it."""
    for pattern, scale in TIMEOUT_PATTERNS:
        found = re.search(pattern, text, re.I)
        if found and scale is None:
            hours, minutes, seconds = (int(g) for g in found.groups())
            return hours * 3600 + minutes * 60 + seconds
        if found:
            return float(found.group(1)) * scale
    return None


def _timeout_flag(cmd):
    """A timeout flag the script already takes (--timeout_minutes 0.2, --nccl-timeout 600), with its unit."""
    for flag in cmd.script_flags:
        if "timeout" in flag.key and flag.key != "ddp_timeout" and flag.value is not None:
            try:
                float(flag.value)
            except ValueError:
                continue
            unit = flag.key.rsplit("_", 1)[-1]
            return flag, UNIT_SECONDS.get(unit, 1)
    return None, 1


def _seconds(value: float) -> str:
    return f"{value:g} s"


def increase_timeout(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    fired, source = timeout_from_log(evidence_text(ctx)), "the log"
    own_flag, unit = _timeout_flag(cmd)
    ddp = cmd.flag("ddp_timeout")
    if fired is None and own_flag is not None:
        fired, source = float(own_flag.value) * unit, f"the command's {own_flag.name} {own_flag.value}"
    if fired is None and ddp is not None and (ddp.value or "").isdigit():
        fired, source = float(ddp.value), f"the command's {ddp.name} {ddp.value}"
    notes = []
    old_s = fired if fired is not None else 1800.0
    if fired is None:
        notes.append("the log does not state the timeout: PyTorch's default of 1800 s is assumed")
    new_s = max(old_s * 2, 3600.0)
    notes.append(f"collective timeout {_seconds(old_s)} -> {_seconds(new_s)}")
    if fired is not None:
        notes.append(f"{_seconds(old_s)} is the timeout that fired ({source})")
    if own_flag is not None:
        new_value = new_s / unit
        edits.rw.set_flag((own_flag.key,), f"{new_value:g}")
        notes.append(f"the script's own {own_flag.name} is in {'minutes' if unit == 60 else 'seconds' if unit == 1 else 'its unit'}: "
                     f"{own_flag.value} -> {new_value:g}")
    elif not edits.set(("ddp_timeout",), int(new_s), in_code=(
            f"pass timeout=datetime.timedelta(seconds={int(new_s)}) to torch.distributed.init_process_group "
            f"(accelerate: InitProcessGroupKwargs(timeout=timedelta(seconds={int(new_s)}))); the log shows "
            f"{_seconds(old_s)}")):
        pass
    for name, value in FLIGHT_RECORDER.items():
        edits.set_env(name, value)
    notes.append("if it times out again, the Flight Recorder dumps (/tmp/nccl_trace_rank_*) show which rank "
                 "never entered the collective: a longer timeout only helps when one rank was merely slow "
                 "(saving, evaluating or preprocessing on rank 0)")
    return edits.fix(
        kind, f"Raise the collective timeout {_seconds(old_s)} -> {_seconds(new_s)} and record a Flight Recorder dump",
        "The NCCL watchdog killed a collective that waited longer than the timeout; a rank busy with slow work "
        "(preprocessing, checkpointing) needs more time, and the dump tells a hang from a slow rank.",
        notes=notes, timeout_s={"before": old_s, "after": new_s},
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


_LAUNCHER_VARIABLE = re.compile(rf"KeyError: '({'|'.join(LAUNCHER_VARIABLES)})'")


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
    unset = _LAUNCHER_VARIABLE.search(text)
    if unset:
        first = (ctx.command or "").strip().splitlines()[0].strip() if (ctx.command or "").strip() else ""
        start = first.split(None, 1)[1] if re.match(r"python3?\s+\S", first) else "train.py ..."
        notes = [f"torchrun --nproc_per_node <GPUs per node> {start}",
                 "under Slurm, one task per node: srun torchrun --nnodes $SLURM_NNODES --nproc_per_node <GPUs> "
                 "--rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 ...; or one task per GPU with RANK, "
                 "LOCAL_RANK and WORLD_SIZE exported from SLURM_PROCID, SLURM_LOCALID and SLURM_NTASKS"]
        return edits.fix(kind, "Start the script under a distributed launcher",
                         f"The script reads {unset.group(1)}, which only a distributed launcher sets; it was started "
                         "as a plain process, so it cannot join the job.", notes=notes)
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


UNEVEN_RANK_KINDS = ("fix_config", "fix_code", "fix_data_file")  # the fixes uneven_ranks() writes


def out_of_step(ctx) -> bool:
    """The timeout is one rank waiting elsewhere than the others (another collective, another line)."""
    facts = ctx.facts or {}
    return ctx.category == "nccl_timeout" and (facts.get("out_of_step") is not None or bool(facts.get("diverged")))


def uneven_ranks(ctx, kind: str) -> dict:
    """fix_config / fix_code / fix_data_file for a rank that fell out of step: the ranks must make the same
    collectives in the same order, so each needs the same number of batches and no rank may skip a call."""
    edits = Edits(ctx)
    rank = (ctx.facts or {}).get("out_of_step")
    who = f"rank {rank}" if rank is not None else "one rank"
    why = (f"{who} was waiting in another collective than the others when the watchdog fired: the ranks took "
           "different paths (a different number of batches, a skipped or extra collective), so a longer timeout "
           "only delays the same hang.")
    if kind == "fix_config":
        title = "Give every rank the same number of batches"
        notes = ["drop the last uneven batch on every rank (dataloader_drop_last: true, or the sampler's "
                 "drop_last=True)",
                 "settings that make per-rank batch counts differ: sample packing, length grouping "
                 "(group_by_length), per-rank streaming shards of unequal size; turn them off or make them "
                 "count batches across ranks"]
        packing, _ = lookup(ctx, edits.cmd, ("sample_packing", "packing"))
        if edits.set(("dataloader_drop_last",), True, add=False):
            title = "Drop the last uneven batch on every rank (dataloader_drop_last: true)"
        elif str(packing).lower() in ("true", "1", "yes") and edits.set(("sample_packing", "packing"), False,
                                                                        add=False):
            title = "Turn sample packing off: packed batches differ in number from rank to rank"
        return edits.fix(kind, title, why, notes=notes)
    if kind == "fix_data_file":
        return edits.fix(kind, "Give every rank's shard the same number of rows", why,
                         notes=[f"count the rows (and the batches after filtering) of {who}'s shard against the "
                                "others'; split the data into equal shards and drop the remainder"])
    return edits.fix(kind, "Make every rank call the same collectives in the same order", why,
                     notes=["no collective under a rank-only branch (if rank == 0: ... all_reduce/barrier)",
                            "a step that one rank skips (a NaN guard, an empty batch) must be skipped by all: "
                            "all_reduce the skip flag first, then skip together",
                            "uneven inputs in DDP: wrap the loop in model.join(), or stop at the smallest "
                            "rank's batch count"], cost="medium")
