"""The optional inputs: launch command, configs and a data sample."""

from __future__ import annotations

import json
from pathlib import Path

from triage.commandline import LaunchCommand
from triage.errors import UnusableInput

MAX_SIDE_FILE = 16 * 1024 * 1024


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


def launcher_from_command(cmd: LaunchCommand | None) -> str | None:
    """The launcher as the diagnosis names it, from the parsed command (see triage.commandline)."""
    if cmd is None:
        return None
    if cmd.launcher in ("torchrun", "deepspeed", "accelerate"):
        return cmd.launcher
    for wrapper in cmd.wrappers:
        if wrapper in ("srun", "sbatch", "salloc"):
            return "slurm"
        if wrapper in ("mpirun", "mpiexec"):
            return "mpirun"
    if cmd.launcher == "sbatch":
        return "slurm"
    if cmd.launcher == "python" or cmd.launcher.endswith("-cli"):
        return "python"
    return None
