#!/usr/bin/env bash
# Build the repro sandbox's runtime: a venv on the system interpreter, outside any home folder, that
# the sandbox's unprivileged uid can read. CPU torch first (pinned: an unpinned torch pulls a CUDA
# build), then the Hugging Face stack the reference training script and user scripts import.
# Idempotent: a stamp holding this file's hash skips a finished install.
#   TRIAGE_SANDBOX_RUNTIME  where it goes (default /opt/triage-sandbox)
#   TRIAGE_SANDBOX_PYTHON   the interpreter (default /usr/bin/python3.11)
#   TRIAGE_TORCH_PIP_ARGS   extra pip arguments for torch only, e.g. an index of CPU-only wheels
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME="${TRIAGE_SANDBOX_RUNTIME:-/opt/triage-sandbox}"
PYTHON="${TRIAGE_SANDBOX_PYTHON:-/usr/bin/python3.11}"
STAMP="$RUNTIME/.triage-runtime"
TORCH="torch==2.13.0"
STACK=("transformers>=4.46,<6" "accelerate>=1.0,<2" "trl>=0.12,<2" "peft>=0.13,<1" "datasets>=3,<6")

say() { echo "sandbox-runtime: $*" >&2; }
wanted="$(sha256sum "$0" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ] && [ -x "$RUNTIME/bin/python" ]; then
    say "up to date at $RUNTIME"
    exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    missing=()
    command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
    command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
    "$PYTHON" -m venv --help >/dev/null 2>&1 && "$PYTHON" -c "import ensurepip" 2>/dev/null || missing+=(python3-venv)
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing ${missing[*]}"
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
fi
command -v bwrap >/dev/null 2>&1 || { say "ERROR: bwrap missing (Debian: apt-get install bubblewrap)"; exit 1; }

start=$(date +%s)
[ -x "$RUNTIME/bin/python" ] || "$PYTHON" -m venv "$RUNTIME"
"$RUNTIME/bin/python" -m pip install -q --upgrade pip
say "installing $TORCH (CPU build)"
# shellcheck disable=SC2086  # word splitting of the optional extra arguments is intended
"$RUNTIME/bin/python" -m pip install -q ${TRIAGE_TORCH_PIP_ARGS:-} "$TORCH"
say "installing ${STACK[*]}"
"$RUNTIME/bin/python" -m pip install -q "$TORCH" "${STACK[@]}"
"$RUNTIME/bin/python" -c "import torch, transformers, accelerate, trl, peft; assert not torch.cuda.is_available() or True"
chmod -R a+rX "$RUNTIME"
echo "$wanted" > "$STAMP"
say "ready at $RUNTIME in $(( $(date +%s) - start )) s"
