"""GPU, link and node faults."""

from __future__ import annotations

from triage.rules import ROOT, rule

RULES = [
    rule(
        "hardware.ecc",
        "hardware",
        ROOT,
        ["ECC error", "ecc error"],
        r"(?:uncorrectable |double[- ]bit )?ECC error(?!s?\W{0,3}0\b)",  # not "ECC errors: 0" in a health report
        ["replace_hardware"],
        0.95,
        "the GPU reported an ECC memory error: a hardware fault",
    ),
    rule(
        "hardware.ib_port_error",
        "hardware",
        ROOT,
        ["async event : port error", "async event: port error", "local catastrophic error"],
        # the InfiniBand adapter telling NCCL that its port went down (a flapping link, a bad cable or switch
        # port) or that the adapter itself failed: the collectives over it then hang or fail on every rank
        r"NET/IB ?: ?Got async event ?: ?(?:port error|local catastrophic error)",
        ["replace_hardware", "set_nccl_env"],
        0.7,  # above the watchdogs of a hang over the link; below an NCCL error a rank raised for it
        "an InfiniBand port on this node went down during training (a flapping link, cable or switch port): drain "
        "the node or reseat the link; NCCL's collectives over it hang",
    ),
    rule(
        "hardware.xid",
        "hardware",
        ROOT,
        [
            "Xid",
            "fallen off the bus",
            "GPU is lost",
            "device handle",
            "NVLink",
            "nvidia-smi has failed",
            "GPU has fallen",
        ],
        r"NVRM: Xid|\bXid \(|fallen off the bus|GPU is lost|Unable to determine the device handle for GPU|"
        r"NVLink.{0,60}(?:error|fail|down)|nvidia-smi has failed",
        ["replace_hardware"],
        0.9,
        "a GPU stopped responding to the driver (Xid / fallen off the bus)",
    ),
    rule(
        "hardware.gpu_system_not_ready",
        "hardware",
        ROOT,
        ["system not yet initialized", "Fabric Manager failed", "fabricmanager"],
        # CUDA error 802 (cudaErrorSystemNotReady): on NVSwitch machines the fabric manager service is down
        # or does not match the driver, so no GPU of the node can be used
        r"Error 802: system not yet initialized|system not yet initialized|"
        r"Fabric Manager failed to initialize|nvidia-fabricmanager\.service.{0,40}failed",
        ["replace_hardware"],
        0.85,
        "the node's GPUs are not ready (CUDA error 802): its NVIDIA fabric manager is down or does not match "
        "the driver; fix the node's fabric manager / driver, or run elsewhere",
    ),
    rule(
        "hardware.node_failure",
        "hardware",
        ROOT,
        ["Node failure on"],
        # the scheduler lost a node of the job (it stopped answering: power, kernel panic, a dead NIC or GPU
        # board): every rank there vanished, and the peers' NCCL errors and timeouts follow from it
        r"srun: error: Node failure on \S+",
        ["replace_hardware"],
        0.85,
        "the scheduler lost one of the job's nodes (node failure): drain that node, resubmit without it and "
        "resume from the last checkpoint",
    ),
    rule(
        "hardware.job_node_failure",
        "hardware",
        ROOT,
        ["NODE FAILURE", "NODE_FAIL"],
        # the job's end record (slurmstepd, sacct): it names the node that reported it, not the node lost
        r"CANCELLED AT \S+ DUE TO NODE FAILURE|\bNODE_FAIL\b",
        ["replace_hardware"],
        0.8,
        "the scheduler ended the job for a node failure: drain the lost node (scontrol show node, sacct -j), "
        "resubmit without it and resume from the last checkpoint",
    ),
    rule(
        "hardware.unknown_error",
        "hardware",
        ROOT,
        ["CUDA error: unknown error", "uncorrectable"],
        r"CUDA error: unknown error|uncorrectable (?:NVLink|PCIe|error)",
        ["replace_hardware"],
        0.6,
        "the GPU failed with an unexplained device error",
    ),
]
