"""A store: a writer node and a reader node over one durable log.

The writer's UUID is kept in the data directory so that a restarted store is
the same store to producers counting distinct ACKs. Run as
`python -m gateway.mesh.store`.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import structlog
import trio
import zmq

from gateway.mesh import cli
from gateway.mesh.config import MeshConfig, new_uuid
from gateway.mesh.store.log import StoreLog
from gateway.mesh.store.reader import StoreReader
from gateway.mesh.store.writer import StoreWriter


LOCK_FILE = "store.lock"


class StoreDirectoryInUse(Exception):
    """Another store process holds this data directory."""


@contextmanager
def locked_directory(directory: Path) -> Iterator[None]:
    """Hold an exclusive flock on the data directory: two stores writing one log would corrupt it."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            structlog.get_logger().error("store_directory_in_use", directory=str(directory))
            raise StoreDirectoryInUse(str(directory)) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def store_uuid(directory: Path) -> str:
    """This store's lasting identity, created on first start."""
    path = directory / "writer.uuid"
    if not path.exists():
        path.write_text(new_uuid())
    return path.read_text().strip()


async def run_store(context: zmq.Context, config: MeshConfig, log=None, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run writer and reader, and the store-wide retention if any, until cancelled; `log`
    defaults to a StoreLog under store_db."""
    directory = Path(config.store_db)
    directory.mkdir(parents=True, exist_ok=True)
    with locked_directory(directory):
        if log is None:
            log = await trio.to_thread.run_sync(partial(open_log, directory / "log", config))
        writer = StoreWriter(context, config, log, uuid=store_uuid(directory))
        reader = StoreReader(context, config, log, writer_uuid=writer.node.uuid)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(writer.run)
                await nursery.start(reader.run)
                if has_retention(config):
                    nursery.start_soon(enforce_retention, log, config.store_retention_check_interval_ms)
                task_status.started((writer, reader))
        finally:
            writer.close()
            reader.close()
            log.close()


def open_log(directory: Path, config: MeshConfig) -> StoreLog:
    return StoreLog(directory, fsync=config.store_fsync, fsync_interval_ms=config.store_fsync_interval_ms,
                    retention_bytes=unlimited_as_none(config.store_retention_bytes),
                    retention_ms=unlimited_as_none(config.store_retention_ms),
                    segment_bytes=config.store_segment_bytes)


def unlimited_as_none(limit: int) -> int | None:
    return None if limit < 0 else limit


def has_retention(config: MeshConfig) -> bool:
    return config.store_retention_bytes >= 0 or config.store_retention_ms >= 0


async def enforce_retention(log: StoreLog, interval_ms: int) -> None:
    """Delete the segments the store-wide retention no longer keeps, every interval."""
    while True:
        await trio.sleep(interval_ms / 1000)
        await trio.to_thread.run_sync(log.enforce_retention, int(time.time() * 1000))


def main() -> None:
    parser = cli.parser("Dafka store: a writer and a reader node over a durable log",
                        [*cli.BEACON_OPTIONS, "--store-db", "--store-fsync", "--store-fsync-interval-ms",
                         "--store-retention-bytes", "--store-retention-ms", "--store-retention-check-interval-ms",
                         "--store-segment-bytes"])
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when standard input closes: a parent process's lifeline")
    arguments = parser.parse_args()
    try:
        cli.run(run_store, cli.config_from(arguments), lifeline=arguments.exit_on_stdin_eof)
    except* StoreDirectoryInUse:  # logged where found
        sys.exit(1)


if __name__ == "__main__":
    main()
