"""The mesh the gateway runs itself by default: a tower, and stores as child processes.

The tower runs in the gateway's process (it only relays beacons); each store
runs in a process of its own, so that store I/O and the gateway's request
handling use both cores.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Sequence

import structlog
import trio
import zmq

from gateway.mesh.store.storage_failure import STORAGE_FAILED
from gateway.mesh.store.store_node import DIRECTORY_UNUSABLE, existing_store_uuid
from gateway.mesh.tower import run_tower
from gateway.settings.table import Settings
from gateway.store_processes import start_store, stop_store, store_directory

log = structlog.get_logger()

STORE_RESTART_DELAY_S = 0.1  # doubled after each quick exit, up to the maximum
STORE_MAX_RESTART_DELAY_S = 5.0  # a store whose disk failed is restarted this often at least
STORE_STABLE_S = 30.0  # a store that ran this long before exiting starts the count anew
STORE_FAILURES_TO_GIVE_UP = 5


StoreFailed = Callable[[str], None]  # told the writer UUID of a store whose disk failed


async def run_embedded_mesh(context: zmq.Context, settings: Settings, store_failed: StoreFailed,
                            started: Sequence[subprocess.Popen] = (), *,
                            task_status=trio.TASK_STATUS_IGNORED) -> None:
    """The tower, then `embedded.stores` stores (those `started` already taken over), until cancelled."""
    async with trio.open_nursery() as nursery:
        await nursery.start(run_tower, context, settings.mesh)
        for number in range(settings.broker.embedded_stores):
            nursery.start_soon(run_store, settings, number, store_failed,
                               started[number] if number < len(started) else None)
        task_status.started()


class EmbeddedStoreFailed(Exception):
    """An embedded store that keeps exiting soon after it starts."""


async def run_store(settings: Settings, number: int, store_failed: StoreFailed,
                    started_early: subprocess.Popen | None = None) -> None:
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
    HTTP endpoint. Its first process may have been started before the loop ran
    (`started_early`, store_processes.py).
    """
    directory = store_directory(settings, number)
    failures = 0
    while True:
        log.info("store_starting", number=number, directory=str(directory), early=started_early is not None)
        started = trio.current_time()
        returncode = await exit_code(started_early or start_store(settings, number))
        started_early = None
        if returncode == DIRECTORY_UNUSABLE:
            raise EmbeddedStoreFailed(f"embedded store {number} cannot use its data directory {directory} (see "
                                      f"its store_directory_unusable line): fix or move it, or give another log.dirs")
        failures = failures + 1 if trio.current_time() - started < STORE_STABLE_S else 1
        storage_failed = returncode == STORAGE_FAILED
        if storage_failed:
            with contextlib.suppress(OSError):  # none: it failed before it had an identity, or ACKed anything
                store_failed(existing_store_uuid(directory))
        if failures >= STORE_FAILURES_TO_GIVE_UP and not storage_failed:
            raise EmbeddedStoreFailed(
                f"embedded store {number} ({directory}) exited {failures} times in a row soon after starting "
                f"(last exit code {returncode}); its log lines above say why")
        delay = min(STORE_RESTART_DELAY_S * 2 ** min(failures - 1, 16), STORE_MAX_RESTART_DELAY_S)
        log.warning("store_storage_failed" if storage_failed else "store_exited", number=number,
                    returncode=returncode, restart_in_s=delay)
        await trio.sleep(delay)


async def exit_code(process: subprocess.Popen) -> int:
    """The exit code of a store process, waited for in a worker thread; cancelled, the store is
    stopped (`stop_store`: SIGTERM, then SIGKILL)."""
    try:
        return await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(stop_store, process)
