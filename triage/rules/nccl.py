"""Collective timeouts and communication-library failures (NCCL, gloo)."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule
from triage.rules.exceptions import library_file


def _timeout(match: re.Match) -> dict:
    found = re.search(r"Timeout\(ms\)=(\d+)|Timed out waiting (\d+)ms", match.string)
    out = {}
    if found:
        out["timeout_ms"] = int(found.group(1) or found.group(2))
    op = re.search(r"OpType=(\w+)", match.string)
    if op:
        out["op"] = op.group(1)
    seq = re.search(r"SeqNum=(\d+)", match.string)
    if seq:
        out["seq_num"] = int(seq.group(1))
    numel = re.search(r"NumelIn=(\d+)", match.string)
    if numel:
        out["numel_in"] = int(numel.group(1))
    return out


# the launcher library places each process on its GPU (accelerate's state): two ranks on one GPU are more
# processes than GPUs, or overlapping CUDA_VISIBLE_DEVICES, before they are the script's code
_LAUNCHER_PLACES = re.compile(r"[/\\]accelerate[/\\]")
# a Ray-scheduled rollout/inference worker (vLLM under Ray): its release assigns the GPUs
_RAY_WORKER = re.compile(r"[/\\](?:ray|vllm)[/\\]")


def _own_script_places_devices(text: str, frames: list[dict]):
    """Two ranks on one GPU. From the team's own script (it builds the process group or DDP itself): it never
    called torch.cuda.set_device(local_rank), so every rank uses GPU 0. Inside a Ray-scheduled worker, the
    release assigns the GPUs. Otherwise (accelerate placing the processes, or no frames) the launch asked for
    more processes than the GPUs it was given."""
    files = [str(frame.get("file", "")) for frame in frames]
    if any(_LAUNCHER_PLACES.search(path) for path in files):
        return ("nccl_error", ("fix_config", "fix_code"),
                "two ranks were placed on the same GPU: the launch starts more processes than the GPUs it sees "
                "(num_processes against CUDA_VISIBLE_DEVICES)")
    if any(not library_file(path) for path in files):
        return ("nccl_error", ("fix_code", "fix_config"),
                "two ranks were placed on the same GPU: the script never calls torch.cuda.set_device(local_rank) "
                "(or builds its device from the global rank) before creating the process group or DDP")
    if any(_RAY_WORKER.search(path) for path in files):
        return None  # the rule's own reading: the release's GPU assignment first
    return ("nccl_error", ("fix_config", "fix_code", "pin_versions"),
            "two ranks were placed on the same GPU: the launch starts more processes than the GPUs it sees "
            "(nproc_per_node / num_processes against CUDA_VISIBLE_DEVICES)")


def _laggards(match: re.Match) -> dict:
    ranks = [int(rank) for rank in re.findall(r"\d+", match.group(1))]
    return {"laggard_ranks": ranks[:64]} if ranks else {}


RULES = [
    rule(
        "nccl.monitored_barrier",
        "nccl_timeout",
        ROOT,
        ["failed to pass monitoredBarrier"],
        # torch.distributed.monitored_barrier on rank 0 names the ranks that never arrived: they hung or died
        # before the barrier (their own error, if they printed one, says why)
        r"Ranks? ([\d, ]{1,400}) failed to pass monitoredBarrier",
        ["increase_timeout", "fix_code"],
        0.6,
        "the monitored barrier named ranks that never arrived: they stalled or died before it",
        facts=_laggards,
    ),
    rule(
        "nccl.shm_segment",
        "nccl_error",
        ROOT,
        ["shared memory segment", "/dev/shm/nccl"],
        r"(?:creating|create|open|allocate) shared memory segment /dev/shm/nccl|"
        r"/dev/shm/nccl-\S+.{0,80}(?:No space|failed|error)",
        ["increase_shm", "set_nccl_env"],
        0.93,
        "NCCL's shared-memory transport could not create its segment in /dev/shm (a container's small default)",
    ),
    rule(
        "nccl.watchdog_timeout",
        "nccl_timeout",
        ROOT,
        ["Watchdog caught", "Timeout(ms)", "timed out", "Timed out", "collective operation timeout"],
        r"Watchdog caught collective operati|WorkNCCL\(.{0,300}Timeout\(ms\)=\d+.{0,80}ran for|"
        r"collective operation timeout|Timed out waiting \d+ms for (?:recv|send)|"
        r"(?:NCCL|collective|barrier|all_?reduce|all_?gather|broadcast).{0,40}timed out",
        ["increase_timeout", "set_nccl_env"],
        0.65,
        "a collective operation hung until the watchdog timed it out",
        facts=_timeout,
    ),
    rule(
        # the heartbeat monitor: the watchdog thread itself made no progress for the heartbeat timeout (a collective
        # or a CUDA call hung so long that the watchdog blocked), and the monitor ends the process
        "nccl.watchdog_stuck",
        "nccl_timeout",
        ROOT,
        ["watchdog got stuck", "due to ProcessGroupNCCL watchdog hang"],
        r"ProcessGroupNCCL's watchdog got stuck for \d+ seconds|due to ProcessGroupNCCL watchdog hang",
        ["increase_timeout", "set_nccl_env"],
        0.5,
        "the NCCL watchdog itself hung (a collective or a CUDA call blocked it) until the heartbeat monitor "
        "ended the process",
    ),
    rule(
        "nccl.duplicate_gpu",
        "nccl_error",
        ROOT,
        ["Duplicate GPU"],
        r"Duplicate GPU detected",
        ["pin_versions", "fix_config", "fix_code"],
        0.9,
        "two ranks were placed on the same GPU, which NCCL refuses",
        within=_own_script_places_devices,
    ),
    rule(
        "nccl.unhandled_cuda",
        "nccl_error",
        ROOT,
        ["unhandled cuda error", "ncclUnhandledCudaError"],
        r"unhandled cuda error|ncclUnhandledCudaError",
        ["set_nccl_env", "pin_versions"],
        0.8,
        "NCCL hit a CUDA failure inside the communication library",
    ),
    rule(
        "nccl.system_error",
        "nccl_error",
        ROOT,
        [
            "unhandled system error",
            "ncclSystemError",
            "ncclInternalError",
            "internal error",
            "ncclInvalidUsage",
            "invalid usage",
            "NCCL error",
            "ncclInvalidArgument",
        ],
        r"unhandled system error|ncclSystemError|ncclInternalError|NCCL error.{0,200}internal error|"
        # (the bare words as the library prints them: "NCCL error in: <file>:<line>", "NCCL error: ...",
        # "NCCL Error 2: ..."; never a sentence about one, a post's title "NCCL error after 15 steps")
        r"ncclInvalidUsage|NCCL error.{0,200}invalid usage|ncclInvalidArgument|NCCL error(?: in)?:|NCCL [Ee]rror \d",
        ["set_nccl_env", "pin_versions"],
        0.7,
        "the NCCL communication library failed",
    ),
    rule(
        "nccl.ofi_option_unknown",
        "version_mismatch",
        ROOT,
        ["Couldn't set FI_OPT_", "Could not set FI_OPT_"],
        # the OFI network plugin (aws-ofi-nccl) asking libfabric for an option the installed libfabric does not
        # have (-92, ENOPROTOOPT): the plugin was built against a newer libfabric than the one on the nodes
        r"NET/OFI Could(?:n't| not) set FI_OPT_\w+[^\n]{0,40}(?:RC: -92|Protocol not available)",
        ["pin_versions", "set_nccl_env"],
        0.85,
        "the NCCL OFI plugin was built for a newer libfabric than the one installed (it asks for an option the "
        "installed libfabric does not know): install the matching EFA/libfabric release or a plugin built for it",
    ),
    rule(
        "nccl.network",
        "nccl_error",
        ROOT,
        ["NET/Socket", "NET/IB", "Network is unreachable", "NCCL WARN"],
        # (not the plugin loader's notice that no external network plugin is installed, nor P2P left off
        # between two GPUs: NCCL falls back to its own transports or shared memory, and healthy jobs print both)
        r"NCCL WARN(?! ?NET/Plugin ?: ?(?:Could not find|No plugin found|Plugin load|Failed to find)"
        r"| ?Could not enable P2P between)"
        r".{0,300}(?:unreachable|Connection refused|connect|socket|Socket|NET/|IB|P2P|peer)|"
        r"NET/(?:Socket|IB).{0,100}(?:[Ee]rror|unreachable|refused|failed)|Network is unreachable",
        ["set_nccl_env"],
        0.6,
        "NCCL could not set up its network transport between the ranks",
    ),
    rule(
        "nccl.p2p",
        "nccl_error",
        ROOT,
        ["peer access", "not supported", "cudaIpc"],
        r"peer access is not supported|P2P.{0,80}not supported|cudaIpc\w+ failed",
        ["set_nccl_env"],
        0.7,
        "GPU peer-to-peer transport failed between the GPUs",
    ),
    rule(
        "nccl.warn",
        "nccl_error",
        HINT,
        ["NCCL WARN"],
        r"NCCL WARN",
        ["set_nccl_env"],
        0.3,
        "NCCL printed warnings",
    ),
    rule(
        "nccl.debug_output",
        "nccl_error",
        HINT,
        ["NCCL INFO"],
        r"NCCL INFO",
        ["set_nccl_env"],
        0.12,
        "the log ends in NCCL initialisation output",
        sampled=True,
    ),
]
