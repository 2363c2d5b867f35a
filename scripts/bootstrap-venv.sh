#!/usr/bin/env bash
# Create .venv (python3.11) and install the project with its dev extras; reinstall only when
# pyproject.toml changed. On Debian as root, installs python3-venv when ensurepip is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
VENV="${VENV:-.venv}"
STAMP="$VENV/.triage-installed"

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "bootstrap-venv: $PYTHON is not on PATH (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PYTHON" -m venv "$VENV" 2>/tmp/triage-venv.err; then
        rm -rf "$VENV"
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "bootstrap-venv: installing python3-venv" >&2
            apt-get update -q
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv
            "$PYTHON" -m venv "$VENV"
        else
            cat /tmp/triage-venv.err >&2
            echo "bootstrap-venv: '$PYTHON -m venv' failed; install the venv module (Debian: python3-venv)" >&2
            exit 1
        fi
    fi
fi

wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$wanted" ]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[dev]'
    echo "$wanted" > "$STAMP"
fi
