#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
command -v kcat >/dev/null 2>&1 || missing="$missing kcat"
command -v javac >/dev/null 2>&1 || missing="$missing openjdk-17-jdk-headless"
# The compose tests build their base image with debootstrap, and drive the Docker Engine with
# Compose: Debian's Compose 1 where the engine has no compose plugin.
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
if command -v docker >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
    command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
fi
if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null
fi
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
# Lint first: pyflakes, bugbear and import order (pyproject.toml's [tool.ruff]).
.venv/bin/ruff check .
# Test modules run in three worker processes, a module per worker: most tests wait on
# clients and timeouts rather than compute, so this fits a 2-core machine.
exec .venv/bin/python -m pytest -n 3 --dist loadfile "$@"
