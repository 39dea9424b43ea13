"""A store: a writer node and a reader node over one durable log.

The writer's UUID is kept in the data directory so that a restarted store is
the same store to producers counting distinct ACKs. Run as
`python -m gateway.mesh.store`.
"""

from __future__ import annotations

from pathlib import Path

import trio
import zmq

from gateway.mesh import cli
from gateway.mesh.config import MeshConfig, new_uuid
from gateway.mesh.store.log import StoreLog
from gateway.mesh.store.reader import StoreReader
from gateway.mesh.store.writer import StoreWriter


def store_uuid(directory: Path) -> str:
    """This store's lasting identity, created on first start."""
    path = directory / "writer.uuid"
    if not path.exists():
        path.write_text(new_uuid())
    return path.read_text().strip()


async def run_store(context: zmq.Context, config: MeshConfig, log=None, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run writer and reader until cancelled; `log` defaults to a StoreLog under store_db."""
    directory = Path(config.store_db)
    directory.mkdir(parents=True, exist_ok=True)
    if log is None:
        log = await trio.to_thread.run_sync(StoreLog, directory / "log")
    writer = StoreWriter(context, config, log, uuid=store_uuid(directory))
    reader = StoreReader(context, config, log, writer_uuid=writer.node.uuid)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            await nursery.start(reader.run)
            task_status.started((writer, reader))
    finally:
        writer.close()
        reader.close()
        log.close()


def main() -> None:
    parser = cli.parser("Dafka store: a writer and a reader node over a durable log",
                        [*cli.BEACON_OPTIONS, "--store-db"])
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when standard input closes: a parent process's lifeline")
    arguments = parser.parse_args()
    cli.run(run_store, cli.config_from(arguments), lifeline=arguments.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
