"""DataLoader worker deaths and shared memory."""

from __future__ import annotations

from triage.rules import HINT, ROOT, rule

RULES = [
    rule(
        "dataloader.batch_timeout",
        "dataloader_worker",
        ROOT,
        ["DataLoader timed out"],
        # the DataLoader's own `timeout=`: no batch arrived from the workers in time (a slow or hung read)
        r"DataLoader timed out after \d+ seconds",
        ["increase_timeout", "fix_path"],
        0.8,
        "the DataLoader waited longer than its timeout for a batch from its workers: a slow or stuck read "
        "(a network path, a lock) or a timeout set too short",
    ),
    rule(
        "dataloader.workers_shown",
        "dataloader_worker",
        HINT,
        ["num_workers"],
        # a printed config or a warning naming the DataLoader's worker count: evidence for the fix order
        # of a host OOM, never a diagnosis (under the pool's weight floor)
        r"\bnum_workers\b['\"`]?\s?[=:]\s?['\"`]?([1-9]\d{0,3})\b",
        ["reduce_dataloader_workers"],
        0.05,
        "the run's DataLoaders use worker processes",
        facts=lambda match: {"workers": int(match.group(1))},
    ),
    rule(
        "dataloader.bus_error",
        "dataloader_worker",
        ROOT,
        ["Bus error", "bus error", "shared memory", "(shm)"],
        r"is killed by signal: Bus error|[Uu]nexpected bus error encountered in worker|"
        r"insufficient shared memory|out of shared memory|raise your shared memory limit",
        ["increase_shm", "reduce_dataloader_workers"],
        0.85,
        "a DataLoader worker crashed with a bus error: /dev/shm is too small for the workers",
    ),
    rule(
        "dataloader.shm_full",
        "dataloader_worker",
        ROOT,
        ["/dev/shm", "torch_"],
        r"No space left on device.{0,200}(?:/dev/shm|torch_\w+)|unable to write to file </torch_|"
        r"/dev/shm.{0,80}(?:[Nn]o space|is full|insufficient|too small|[Bb]us error)|"
        r"(?:insufficient|out of|not enough|too small).{0,40}(?:/dev/shm|shared memory)|"
        # mapping a worker's batch out of shared memory: the shm files of workers filled what the host allows
        r"unable to (?:mmap \d+ bytes from|open shared memory object) (?:file )?</torch_",
        ["increase_shm", "reduce_dataloader_workers"],
        0.8,
        "shared memory (/dev/shm) is full",
    ),
    rule(
        "dataloader.worker_killed",
        "dataloader_worker",
        ROOT,
        ["is killed by signal"],
        r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\)? is killed by signal: (?!Bus error|Killed)([\w ]+)",
        ["reduce_dataloader_workers"],
        0.8,
        "a DataLoader worker process died ({signal})",
        facts=lambda m: {"signal": m.group(1).strip()},
    ),
    rule(
        "dataloader.worker_oom",
        "dataloader_worker",
        ROOT,
        ["is killed by signal: Killed"],
        r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\)? is killed by signal: Killed",
        ["reduce_dataloader_workers", "reduce_batch_size"],
        0.8,
        "a DataLoader worker was killed (SIGKILL, most often the host's OOM killer): fewer workers, smaller batches",
    ),
    rule(
        "dataloader.open_files",
        "dataloader_worker",
        ROOT,
        ["Too many open files", "shared memory object", "received 0 items of ancdata"],
        r"Too many open files|unable to open shared memory object|received 0 items of ancdata",
        ["reduce_dataloader_workers", "increase_shm"],
        0.75,
        "DataLoader workers ran out of file descriptors or shared-memory handles",
    ),
    rule(
        "dataloader.bus_error_shell",
        "dataloader_worker",
        ROOT,
        ["Bus error (core dumped)"],
        r"Bus error \(core dumped\)",
        ["increase_shm", "reduce_dataloader_workers"],
        0.5,
        "the process died of a bus error, most often shared memory (/dev/shm) running out",
    ),
    rule(
        "dataloader.exited",
        "dataloader_worker",
        ROOT,
        ["exited unexpectedly"],
        r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\)? exited unexpectedly",
        ["reduce_dataloader_workers"],
        0.6,
        "a DataLoader worker exited unexpectedly",
    ),
]
