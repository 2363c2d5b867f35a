"""What a rank's death by a signal means when it left no exception of its own (the launcher's record:
`exitcode: -9`, `Signal 7 (SIGBUS)`, `exits with return code = 137`).

Each entry: the exit codes and signal names it covers, and what that death says. The engine weighs these
below any rule that read an exception (a rank's own error explains its death better than its exit code),
and a native crash stack with the script's own frame innermost is read in triage/faultstacks.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SignalMeaning:
    id: str
    codes: frozenset[int]  # exit codes as launchers print them (-9, or 137 = 128 + 9 from a shell)
    names: frozenset[str]
    category: str
    fixes: tuple[str, ...]
    weight: float
    summary: str

    def covers(self, exit_code: int | None, signal: str | None) -> bool:
        return exit_code in self.codes or (signal or "") in self.names


SIGKILL_WEIGHT = 0.55

MEANINGS = (
    SignalMeaning(
        "launcher.sigbus", frozenset({-7, 135}), frozenset({"SIGBUS"}), "dataloader_worker",
        ("increase_shm", "reduce_dataloader_workers"), 0.45,
        "the process died of SIGBUS, most often shared memory (/dev/shm) running out under DataLoader workers",
    ),
    SignalMeaning(
        "launcher.sigkill", frozenset({-9, 137}), frozenset({"SIGKILL"}), "host_oom",
        ("fix_config", "reduce_batch_size", "reduce_dataloader_workers"), SIGKILL_WEIGHT,
        "the process was killed with SIGKILL (exit -9) and left no traceback, the signature of the host's "
        "out-of-memory killer",
    ),
    SignalMeaning(
        # an illegal instruction: native code built for instructions this host's CPU lacks (an extension compiled
        # on another node's CPU, a wheel built for AVX-512), not a bug in the Python the job runs
        "launcher.sigill", frozenset({-4, 132}), frozenset({"SIGILL"}), "version_mismatch",
        ("pin_versions", "fix_config"), 0.45,
        "the process died of SIGILL (illegal instruction): native code (a compiled extension or wheel) was built "
        "for a CPU with instructions this node lacks; rebuild or reinstall it on (or for) this node",
    ),
)
