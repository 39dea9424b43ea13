#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
command -v kcat >/dev/null 2>&1 || missing="$missing kcat"
command -v javac >/dev/null 2>&1 || missing="$missing openjdk-17-jdk-headless"
if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null
fi
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
# Test modules run in three worker processes, a module per worker: most tests wait on
# clients and timeouts rather than compute, so this fits a 2-core machine.
exec .venv/bin/python -m pytest -n 3 --dist loadfile "$@"
