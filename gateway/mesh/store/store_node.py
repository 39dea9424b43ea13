"""A store: a writer node and a reader node over one durable log.

The writer's UUID is kept in the data directory so that a restarted store is
the same store to producers counting distinct ACKs. Run as
`python -m gateway.mesh.store`.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import structlog
import trio
import zmq

from gateway.directory_lock import DirectoryInUse, locked_directory
from gateway.lifecycle import first_failure, run_node, served, start_command
from gateway.mesh.mesh_node import MeshBindError
from gateway.mesh.store.cleaner import StoreCleaner
from gateway.mesh.store.entry import CorruptLogError
from gateway.mesh.store.fences import FenceBook
from gateway.mesh.store.reader import StoreReader
from gateway.mesh.store.storage_failure import STORAGE_FAILED, StorageFailed, is_storage_error
from gateway.mesh.store.store_log import StoreLog
from gateway.mesh.store.writer import StoreWriter
from gateway.settings.declaration import Command
from gateway.settings.table import MeshSettings, StoreSettings
from gateway.wall_clock import now_ms
from protocol.dafka import new_uuid

log = structlog.get_logger()

# The exit code of a store whose data directory cannot be used (not writable, not a
# directory, a corrupt log): starting it again would not help.
DIRECTORY_UNUSABLE = 3


UUID_FILE = "writer.uuid"
# What ends a store with an exit code of its own (exit_code_of) rather than a crash.
STORE_FAILURES = (MeshBindError, DirectoryInUse, StorageFailed, OSError, CorruptLogError)


def store_uuid(directory: Path) -> str:
    """This store's lasting identity, created on first start."""
    path = directory / UUID_FILE
    if not path.exists():
        path.write_text(new_uuid())
    return existing_store_uuid(directory)


def existing_store_uuid(directory: Path) -> str:
    """The identity `store_uuid` gave the store in `directory` (OSError if none yet)."""
    return (directory / UUID_FILE).read_text().strip()


async def run_store(context: zmq.Context, mesh: MeshSettings, store: StoreSettings, store_log=None, *,
                    task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run writer and reader, the cleaner, and the store-wide retention if any, until cancelled;
    `store_log` defaults to a StoreLog under store.db."""
    directory = store.store_db
    directory.mkdir(parents=True, exist_ok=True)
    with locked_directory(directory):
        if store_log is None:
            store_log = await trio.to_thread.run_sync(partial(open_log, directory / "log", store))
        fences = FenceBook(directory)
        writer = StoreWriter(context, mesh, store_log, uuid=store_uuid(directory), fences=fences)
        reader = StoreReader(context, mesh, store_log, writer_uuid=writer.node.uuid, fences=fences,
                             durable=writer.durable)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(writer.run)
                await nursery.start(reader.run)
                cleaner = StoreCleaner(store_log, writer.compactions, store.log_cleaner_dedupe_buffer_size)
                nursery.start_soon(keep_cleaning, cleaner, store.log_cleaner_backoff_ms)
                if has_retention(store):
                    nursery.start_soon(enforce_retention, store_log, store.store_retention_check_interval_ms)
                task_status.started((writer, reader))
        finally:
            writer.close()
            reader.close()
            store_log.close()


def open_log(directory: Path, store: StoreSettings) -> StoreLog:
    return StoreLog(directory, fsync=store.store_fsync, fsync_interval_ms=store.store_fsync_interval_ms,
                    retention_bytes=unlimited_as_none(store.store_retention_bytes),
                    retention_ms=unlimited_as_none(store.store_retention_ms),
                    segment_bytes=store.store_segment_bytes, reserve_max_bytes=store.store_segment_reserve_max_bytes)


def unlimited_as_none(limit: int) -> int | None:
    return None if limit < 0 else limit


def has_retention(store: StoreSettings) -> bool:
    return store.store_retention_bytes >= 0 or store.store_retention_ms >= 0


async def enforce_retention(store_log: StoreLog, interval_ms: int) -> None:
    """Delete the segments the store-wide retention no longer keeps, every interval."""
    while True:
        await trio.sleep(interval_ms / 1000)
        await trio.to_thread.run_sync(store_log.enforce_retention, now_ms())


async def keep_cleaning(cleaner: StoreCleaner, backoff_ms: int) -> None:
    """Clean in a worker thread, off the loop; rest log.cleaner.backoff.ms after a round
    that found nothing to do, as Kafka's cleaner threads do. Cancelled, end the pass
    soon and wait for it: the log closes after."""
    try:
        while True:
            if not await trio.to_thread.run_sync(cleaner.clean_due, abandon_on_cancel=True):
                await trio.sleep(backoff_ms / 1000)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(cleaner.stop)


def main() -> None:
    loaded = start_command(Command.STORE, "dafka-store", "Dafka store: a writer and a reader node over a "
                           "durable log.", _arguments)
    settings = loaded.settings
    try:
        run_node(served, settings.http, run_store, settings.mesh, settings.store,
                 lifeline=loaded.arguments.exit_on_stdin_eof, mesh=settings.mesh)
    except* STORE_FAILURES as group:
        sys.exit(exit_code_of(first_failure(group), settings.store.store_db))


def exit_code_of(failure: BaseException, directory: Path) -> int:
    """The exit code of a store that `failure` (one of STORE_FAILURES) ended, logged: 1 for a
    mesh socket it cannot bind or a directory another store holds; a full or failing disk
    (even while the log opens) may recover: STORAGE_FAILED; else the directory is unusable
    as it is."""
    if isinstance(failure, MeshBindError):
        log.error("store_failed", reason=str(failure))
        return 1
    if isinstance(failure, DirectoryInUse):
        log.error("store_directory_in_use", directory=str(directory), reason=str(failure))
        return 1
    if isinstance(failure, OSError) and is_storage_error(failure):
        failure = StorageFailed(failure)
    if isinstance(failure, StorageFailed):
        log.error("storage_failed", path=failure.path, errno=failure.errno_name, reason=failure.strerror,
                  action=failure.action)
        return STORAGE_FAILED
    log.error("store_directory_unusable", directory=str(directory), reason=str(failure))
    return DIRECTORY_UNUSABLE


def _arguments(parser) -> None:
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when standard input closes: a parent process's lifeline")


if __name__ == "__main__":
    main()
