"""The embedded stores' processes: how one is started.

Light to import: the gateway's command starts the stores before it imports
the rest of itself (early_start.py). embedded_mesh.py watches them, and
starts them again if they exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gateway.settings.declaration import ENV_PREFIX, Command
from gateway.settings.sources import flags_for
from gateway.settings.table import Settings

STORE_STOP_S = 5.0  # a store asked to stop (SIGTERM) is killed after this, as trio.run_process does


def store_directory(settings: Settings, number: int) -> Path:
    return settings.broker.log_dirs / f"store-{number}"


def store_command(settings: Settings, number: int) -> list[str]:
    return [sys.executable, "-m", "gateway.mesh.store", "--exit-on-stdin-eof",
            *flags_for(Command.STORE, settings, store_db=store_directory(settings, number), http_port=None)]


def store_environment() -> dict[str, str]:
    """The environment for an embedded store: the gateway passes it its settings itself, so
    that none meant for the gateway (or for standalone stores) reaches it."""
    return {name: value for name, value in os.environ.items() if not name.startswith(ENV_PREFIX)}


def start_stores(settings: Settings) -> list[subprocess.Popen]:
    """Every embedded store, started (none: they run in the gateway's process)."""
    if settings.broker.embedded_stores_in_process:
        return []
    return [start_store(settings, number) for number in range(settings.broker.embedded_stores)]


def start_store(settings: Settings, number: int) -> subprocess.Popen:
    """A process of embedded store `number`: in a session of its own, its standard input a pipe
    only the gateway holds."""
    return subprocess.Popen(store_command(settings, number), stdin=subprocess.PIPE, start_new_session=True,
                            env=store_environment())


def stop_store(process: subprocess.Popen) -> None:
    """Stop a store (unless it ended): SIGTERM, and SIGKILL if it still runs STORE_STOP_S later;
    then reaped, and its pipe closed."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STORE_STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    process.stdin.close()
