"""The mesh the gateway runs itself by default: a tower, and stores as child processes.

The tower runs in the gateway's process (it only relays beacons); each store
runs in a process of its own, so that store I/O and the gateway's request
handling use both cores.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import structlog
import trio
import zmq

from gateway.mesh.store.storage_failure import STORAGE_FAILED
from gateway.mesh.store.store_node import DIRECTORY_UNUSABLE, existing_store_uuid
from gateway.mesh.tower import run_tower
from gateway.settings.declaration import ENV_PREFIX, Command
from gateway.settings.sources import flags_for
from gateway.settings.table import Settings

log = structlog.get_logger()

STORE_RESTART_DELAY_S = 0.1  # doubled after each quick exit, up to the maximum
STORE_MAX_RESTART_DELAY_S = 5.0  # a store whose disk failed is restarted this often at least
STORE_STABLE_S = 30.0  # a store that ran this long before exiting starts the count anew
STORE_FAILURES_TO_GIVE_UP = 5


StoreFailed = Callable[[str], None]  # told the writer UUID of a store whose disk failed


async def run_embedded_mesh(context: zmq.Context, settings: Settings, store_failed: StoreFailed, *,
                            task_status=trio.TASK_STATUS_IGNORED) -> None:
    """The tower, then `embedded.stores` stores, until cancelled."""
    async with trio.open_nursery() as nursery:
        await nursery.start(run_tower, context, settings.mesh)
        for number in range(settings.broker.embedded_stores):
            nursery.start_soon(run_store, settings, number, store_failed)
        task_status.started()


def store_directory(settings: Settings, number: int) -> Path:
    return settings.broker.log_dirs / f"store-{number}"


class EmbeddedStoreFailed(Exception):
    """An embedded store that keeps exiting soon after it starts."""


async def run_store(settings: Settings, number: int, store_failed: StoreFailed) -> None:
    """One embedded store as a child process, stopped with the gateway; restarted with
    a growing delay if it dies, and given up (EmbeddedStoreFailed) after
    STORE_FAILURES_TO_GIVE_UP exits in a row each soon after its start, unless its
    disk failed (STORAGE_FAILED): that store is restarted for as long as it takes,
    since space may return, and `store_failed` is told, so that it does not count as
    in sync until it has written again.

    The store runs in a session of its own, so that a Ctrl-C meant for the
    gateway does not stop it before the gateway has answered in-flight
    produce requests (which need the store). Its standard input is a pipe
    only the gateway holds: when the gateway dies, even by SIGKILL, the store
    sees end of file and stops. It has no retention of its own: the gateway
    applies Kafka's and tells the stores what they may discard. It serves no
    HTTP endpoint.
    """
    directory = store_directory(settings, number)
    command = [sys.executable, "-m", "gateway.mesh.store", "--exit-on-stdin-eof",
               *flags_for(Command.STORE, settings, store_db=directory, http_port=None)]
    failures = 0
    while True:
        log.info("store_starting", number=number, directory=str(directory))
        started = trio.current_time()
        async with trio.open_nursery() as nursery:
            process = await nursery.start(partial(
                trio.run_process, command, stdin=subprocess.PIPE, check=False, start_new_session=True,
                env=_without_settings(os.environ)))
        if process.returncode == DIRECTORY_UNUSABLE:
            raise EmbeddedStoreFailed(f"embedded store {number} cannot use its data directory {directory} (see "
                                      f"its store_directory_unusable line): fix or move it, or give another log.dirs")
        failures = failures + 1 if trio.current_time() - started < STORE_STABLE_S else 1
        storage_failed = process.returncode == STORAGE_FAILED
        if storage_failed:
            with contextlib.suppress(OSError):  # none: it failed before it had an identity, or ACKed anything
                store_failed(existing_store_uuid(directory))
        if failures >= STORE_FAILURES_TO_GIVE_UP and not storage_failed:
            raise EmbeddedStoreFailed(
                f"embedded store {number} ({directory}) exited {failures} times in a row soon after starting "
                f"(last exit code {process.returncode}); its log lines above say why")
        delay = min(STORE_RESTART_DELAY_S * 2 ** min(failures - 1, 16), STORE_MAX_RESTART_DELAY_S)
        log.warning("store_storage_failed" if storage_failed else "store_exited", number=number,
                    returncode=process.returncode, restart_in_s=delay)
        await trio.sleep(delay)


def _without_settings(environ) -> dict[str, str]:
    """The environment for an embedded store: the gateway passes it its settings itself, so
    that none meant for the gateway (or for standalone stores) reaches it."""
    return {name: value for name, value in environ.items() if not name.startswith(ENV_PREFIX)}
