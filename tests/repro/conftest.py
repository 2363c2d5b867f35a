"""The repro tests run the real sandbox: bubblewrap as an unprivileged uid over the runtime venv.

The runtime (CPU torch, transformers, accelerate, trl, peft) is built by `make sandbox-runtime` when
it is missing; if that fails, or the sandbox cannot start, every test here fails loudly.
"""
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def sandbox_runtime():
    from repro import sandbox

    try:
        sandbox.check_available()
    except sandbox.SandboxUnavailable:
        done = subprocess.run(["make", "-C", str(REPO_ROOT), "sandbox-runtime"], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"`make sandbox-runtime` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        sandbox.check_available()
    if os.geteuid() != 0:
        pytest.fail("the repro sandbox starts runs as a dedicated uid through setpriv: run the tests as root")
    return sandbox.runtime_dir()
