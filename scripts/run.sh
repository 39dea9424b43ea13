#!/usr/bin/env bash
# Starts the gateway with its embedded mesh on a fresh machine: installs what it needs first.
# Options are passed to dafka-gateway (see `bash scripts/run.sh --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
# (Re)install when the environment is missing or older than the project's dependencies.
if [ ! -x .venv/bin/dafka-gateway ] || [ pyproject.toml -nt .venv/.installed ]; then
    python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e .
    touch .venv/.installed
fi
exec .venv/bin/dafka-gateway "$@"
