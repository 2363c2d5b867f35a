"""Tiny random-initialised models, one per architecture family, built once inside the sandbox and kept.

The build (importing torch and transformers, saving ~100k parameters) costs several seconds; every
later run binds the cached folder read-only at /work/tiny-model.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from repro import sandbox


def cache_root() -> Path:
    root = Path(getattr(settings, "TRIAGE_REPRO_CACHE", "") or Path(tempfile.gettempdir()) / "triage-repro-cache")
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    return root


def ensure(family: str, hidden: int = 64) -> Path:
    """The cached tiny model of this family; a wider one (``hidden``) for memory checks, where activations
    must outweigh the fixed cost of torch so that a batch-size change shows in the peak."""
    family = "".join(ch for ch in family if ch.isalnum() or ch == "_") or "llama"
    hidden = int(hidden)
    root = cache_root()
    target = root / (family if hidden == 64 else f"{family}_h{hidden}")
    if (target / "config.json").exists():
        return target
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "config.json").exists():
            return target
        result = sandbox.run(["python", "/triage/runtime/tiny_model.py", family, "/work/out/model",
                              "--hidden", str(hidden)],
                             limits=sandbox.SandboxLimits(wall_s=180, address_space_mb=8192))
        files = {name[len("model/"):]: data for name, data in result.files.items() if name.startswith("model/")}
        if not result.ok or "config.json" not in files:
            raise sandbox.SandboxUnavailable(f"could not build the tiny {family} model:\n{result.log[-2000:]}")
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
        for name, data in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o644)
        for folder, _, _ in os.walk(staging):
            Path(folder).chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target
