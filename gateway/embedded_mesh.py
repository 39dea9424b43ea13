"""The mesh the gateway runs itself by default: a tower, and stores as child processes.

The tower runs in the gateway's process (it only relays beacons); each store
runs in a process of its own, so that store I/O and the gateway's request
handling use both cores. With embedded.stores.in.process the stores run in
the gateway's process instead, their records and ACKs passed over inproc
(local_peers.py): a record's round trip then wakes no ZeroMQ I/O thread nor
another process, at the price of sharing the gateway's core. Either way a
store that fails is started again, as below.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import structlog
import trio
import zmq

from gateway.lifecycle import first_failure
from gateway.mesh.store.storage_failure import STORAGE_FAILED
from gateway.mesh.store.store_node import DIRECTORY_UNUSABLE, STORE_FAILURES, existing_store_uuid, exit_code_of
from gateway.mesh.store.store_node import run_store as run_store_node
from gateway.mesh.tower import run_tower
from gateway.settings.table import Settings
from gateway.store_processes import start_store, stop_store, store_directory

log = structlog.get_logger()

STORE_RESTART_DELAY_S = 0.1  # doubled after each quick exit, up to the maximum
STORE_MAX_RESTART_DELAY_S = 5.0  # a store whose disk failed is restarted this often at least
STORE_STABLE_S = 30.0  # a store that ran this long before exiting starts the count anew
STORE_FAILURES_TO_GIVE_UP = 5


class StoreRuns(Protocol):
    """Who is told when an embedded store (its writer's UUID) starts and exits (MeshStorage)."""

    def store_started(self, store: str) -> None: ...

    def store_exited(self, store: str, disk_failed: bool) -> None: ...


async def run_embedded_mesh(context: zmq.Context, settings: Settings, runs: StoreRuns,
                            started: Sequence[subprocess.Popen] = (), *,
                            task_status=trio.TASK_STATUS_IGNORED) -> None:
    """The tower, then `embedded.stores` stores (those `started` already taken over), until cancelled."""
    async with trio.open_nursery() as nursery:
        await nursery.start(run_tower, context, settings.mesh)
        for number in range(settings.broker.embedded_stores):
            if settings.broker.embedded_stores_in_process:
                nursery.start_soon(run_store_in_process, context, settings, number, runs)
            else:
                nursery.start_soon(run_store, settings, number, runs,
                                   started[number] if number < len(started) else None)
        task_status.started()


class EmbeddedStoreFailed(Exception):
    """An embedded store that keeps exiting soon after it starts."""


async def run_store(settings: Settings, number: int, runs: StoreRuns,
                    started_early: subprocess.Popen | None = None) -> None:
    """One embedded store as a child process, stopped with the gateway; restarted with
    a growing delay if it dies, and given up (EmbeddedStoreFailed) after
    STORE_FAILURES_TO_GIVE_UP exits in a row each soon after its start, unless its
    disk failed (STORAGE_FAILED): that store is restarted for as long as it takes,
    since space may return. `runs` is told of each start and exit, and whether the
    disk failed: such a store does not count as in sync until it has written again.

    The store runs in a session of its own, so that a Ctrl-C meant for the
    gateway does not stop it before the gateway has answered in-flight
    produce requests (which need the store). Its standard input is a pipe
    only the gateway holds: when the gateway dies, even by SIGKILL, the store
    sees end of file and stops. It has no retention of its own: the gateway
    applies Kafka's and tells the stores what they may discard. It serves no
    HTTP endpoint. Its first process may have been started before the loop ran
    (`started_early`, store_processes.py).
    """
    async def one_run() -> int:
        nonlocal started_early
        process, started_early = started_early or start_store(settings, number), None
        return await exit_code(process)

    await _supervise(settings, number, runs, one_run)


async def run_store_in_process(context: zmq.Context, settings: Settings, number: int,
                               runs: StoreRuns) -> None:
    """One embedded store on the gateway's own loop and ZeroMQ context, supervised as a store
    process is: its failures become the exit codes the process would have had."""
    store = replace(settings.store, store_db=store_directory(settings, number))

    async def one_run() -> int:
        returncode = 0
        try:
            await run_store_node(context, settings.mesh, store)
        except* STORE_FAILURES as group:
            returncode = exit_code_of(first_failure(group), store.store_db)
        except* Exception as group:  # a store's bug ends that store, as its process would end, not the gateway
            log.error("store_crashed", number=number, exc_info=first_failure(group))
            returncode = 1
        return returncode

    await _supervise(settings, number, runs, one_run)


async def _supervise(settings: Settings, number: int, runs: StoreRuns,
                     one_run: Callable[[], Awaitable[int]]) -> None:
    """Run embedded store `number` again and again, `one_run` giving each run's exit code."""
    directory = store_directory(settings, number)
    failures = 0
    while True:
        log.info("store_starting", number=number, directory=str(directory),
                 in_process=settings.broker.embedded_stores_in_process)
        started = trio.current_time()
        _tell(directory, runs.store_started)
        returncode = await one_run()
        if returncode == DIRECTORY_UNUSABLE:
            raise EmbeddedStoreFailed(f"embedded store {number} cannot use its data directory {directory} (see "
                                      f"its store_directory_unusable line): fix or move it, or give another log.dirs")
        failures = failures + 1 if trio.current_time() - started < STORE_STABLE_S else 1
        storage_failed = returncode == STORAGE_FAILED
        _tell(directory, runs.store_exited, storage_failed)
        if failures >= STORE_FAILURES_TO_GIVE_UP and not storage_failed:
            raise EmbeddedStoreFailed(
                f"embedded store {number} ({directory}) exited {failures} times in a row soon after starting "
                f"(last exit code {returncode}); its log lines above say why")
        delay = min(STORE_RESTART_DELAY_S * 2 ** min(failures - 1, 16), STORE_MAX_RESTART_DELAY_S)
        log.warning("store_storage_failed" if storage_failed else "store_exited", number=number,
                    returncode=returncode, restart_in_s=delay)
        await trio.sleep(delay)


def _tell(directory: Path, told: Callable[..., None], *details) -> None:
    """Call `told` with the store's writer UUID and `details`, unless it has no UUID yet (it never
    ran long enough to take one, so it has ACKed nothing)."""
    with contextlib.suppress(OSError):
        told(existing_store_uuid(directory), *details)


async def exit_code(process: subprocess.Popen) -> int:
    """The exit code of a store process, waited for in a worker thread; cancelled, the store is
    stopped (`stop_store`: SIGTERM, then SIGKILL)."""
    try:
        return await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(stop_store, process)
