"""The optional inputs: launch command, configs and a data sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

from triage.errors import UnusableInput

MAX_SIDE_FILE = 16 * 1024 * 1024
_NPROC = re.compile(r"--(?:nproc[_-]per[_-]node|num[_-]gpus|num_processes|nproc)[= ](\d+)")
_NNODES = re.compile(r"--(?:nnodes|num[_-]nodes|num_machines)[= ](\d+)")
_NTASKS = re.compile(r"(?:--ntasks|-n)[= ](\d+)\b")


def read_text(path: str | Path, what: str) -> str:
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_SIDE_FILE).decode("utf-8", errors="replace")
    except OSError:
        raise UnusableInput(f"cannot read {what} {path.name}: no such file") from None


def load_config(path: str | Path) -> object:
    text = read_text(path, "config")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml

        return yaml.safe_load(text)
    except Exception:  # a config we cannot parse still tells a fix builder nothing; keep its text
        return {"_text": text[:65536]}


def load_data_sample(path: str | Path, max_rows: int = 50) -> object:
    text = read_text(path, "data sample")
    try:
        return json.loads(text)
    except ValueError:
        rows = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                rows.append({"_unparsed": line[:1000]})
            if len(rows) >= max_rows:
                break
        return rows


def world_size_from_command(command: str | None) -> tuple[int | None, int | None]:
    """(nproc_per_node, world_size) as the command states them."""
    if not command:
        return None, None
    nproc = _NPROC.search(command)
    nnodes = _NNODES.search(command)
    per_node = int(nproc.group(1)) if nproc else None
    if per_node is not None:
        return per_node, per_node * (int(nnodes.group(1)) if nnodes else 1)
    tasks = _NTASKS.search(command) if "srun" in command or "mpirun" in command else None
    if tasks:
        return None, int(tasks.group(1))
    stripped = command.strip()
    if (
        stripped.startswith(("python ", "python3 "))
        and "torch.distributed" not in stripped
        and "-m " not in stripped
    ):
        return 1, 1
    return None, None


def launcher_from_command(command: str | None) -> str | None:
    if not command:
        return None
    lowered = command.lower()
    for name, needles in (
        ("torchrun", ("torchrun", "torch.distributed.run", "torch.distributed.launch")),
        ("deepspeed", ("deepspeed ",)),
        ("accelerate", ("accelerate launch",)),
        ("slurm", ("srun ", "sbatch ")),
        ("mpirun", ("mpirun ", "mpiexec ")),
    ):
        if any(needle in lowered for needle in needles):
            return name
    if lowered.strip().startswith(("python", "llamafactory-cli")):
        return "python"
    return None
