"""The CHP server: owns the hashmap, sequences updates, serves snapshots.

Ports: ROUTER for snapshots on P, PUB for updates and HUGZ on P+1, SUB
collector for client KVSETs on P+2. Runs a single server; Binary Star
primary/backup fail-over is not implemented.
"""

import argparse
import signal
import time

import structlog
import trio
import zmq

from gateway.chp.hashmap import Hashmap
from gateway.mesh.sockets import Socket
from protocol.chp import (
    KVMsg,
    decode_icanhaz,
    decode_kvmsg,
    encode_kvmsg,
    hugz,
    is_command_key,
    kthxbai,
)
from protocol.errors import DecodeError

log = structlog.get_logger()


class ChpServer:
    """One CHP server on ports `port`..`port`+2 of `host`."""

    def __init__(
        self,
        port: int,
        *,
        host: str = "*",
        hugz_interval: float = 1.0,
        flush_interval: float = 1.0,
        max_message_size: int = 1 << 20,
        context: zmq.Context | None = None,
    ):
        self.port = port
        self.host = host
        self.hugz_interval = hugz_interval
        self.flush_interval = flush_interval
        self.max_message_size = max_message_size
        self.hashmap = Hashmap()
        self._context = context or zmq.Context.instance()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; `task_status.started()` once all ports are bound."""
        with (
            Socket(self._context, zmq.ROUTER, linger_ms=0) as snapshot,
            Socket(self._context, zmq.PUB, linger_ms=0) as publisher,
            Socket(self._context, zmq.SUB, linger_ms=0) as collector,
        ):
            for inbound in (snapshot, collector):
                # zmq disconnects a peer that sends more, so it cannot exhaust memory.
                inbound.zsock.setsockopt(zmq.MAXMSGSIZE, self.max_message_size)
            snapshot.zsock.bind(f"tcp://{self.host}:{self.port}")
            publisher.zsock.bind(f"tcp://{self.host}:{self.port + 1}")
            collector.zsock.setsockopt(zmq.SUBSCRIBE, b"")
            collector.zsock.bind(f"tcp://{self.host}:{self.port + 2}")
            log.info("chp.server_started", host=self.host, port=self.port)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._serve_snapshots, snapshot)
                nursery.start_soon(self._collect, collector, publisher)
                nursery.start_soon(self._send_hugz, publisher)
                nursery.start_soon(self._flush_expired, publisher)
                task_status.started()

    async def _serve_snapshots(self, snapshot: Socket) -> None:
        while True:
            identity, *request = await snapshot.recv()
            try:
                subtree = decode_icanhaz(request)
            except DecodeError as error:
                log.warning("chp.bad_snapshot_request", reason=str(error))
                continue
            # Taken together, before any await: updates published while the
            # snapshot goes out are newer than its sequence, and the client
            # applies them from its subscription.
            replies = list(self.hashmap.subtree(subtree))
            replies.append(kthxbai(self.hashmap.sequence, subtree))
            for msg in replies:
                await snapshot.send([identity, *encode_kvmsg(msg)])
            log.debug("chp.snapshot_sent", subtree=subtree, sequence=replies[-1].sequence)

    async def _collect(self, collector: Socket, publisher: Socket) -> None:
        while True:
            frames = await collector.recv()
            try:
                update = decode_kvmsg(frames)
                if is_command_key(update.key):
                    raise DecodeError(f"KVSET may not use the command key {update.key}")
                published = self.hashmap.accept(update, _now_ms())
            except DecodeError as error:
                log.warning("chp.bad_update", reason=str(error))
                continue
            await self._publish(publisher, published)

    async def _send_hugz(self, publisher: Socket) -> None:
        while True:
            await publisher.send(encode_kvmsg(hugz(self.hashmap.sequence)))
            await trio.sleep(self.hugz_interval)

    async def _flush_expired(self, publisher: Socket) -> None:
        while True:
            await trio.sleep(self.flush_interval)
            for deletion in self.hashmap.expire(_now_ms()):
                await self._publish(publisher, deletion)

    async def _publish(self, publisher: Socket, msg: KVMsg) -> None:
        await publisher.send(encode_kvmsg(msg))
        log.debug("chp.published", key=msg.key, sequence=msg.sequence, delete=msg.is_delete)


def _now_ms() -> int:
    # Expiries are wall-clock instants so that they mean the same on every host.
    return time.time_ns() // 1_000_000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gateway.chp.server",
        description="Run a CHP (clustered hashmap protocol) server: snapshots on "
        "PORT (ROUTER), updates and heartbeats on PORT+1 (PUB), client updates "
        "on PORT+2 (SUB).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=5556, help="base port P")
    parser.add_argument("--host", default="*", help="interface to bind; * for all")
    parser.add_argument(
        "--hugz-interval", type=float, default=1.0, help="seconds between HUGZ heartbeats"
    )
    parser.add_argument(
        "--flush-interval", type=float, default=1.0, help="seconds between ttl expiry sweeps"
    )
    parser.add_argument(
        "--max-message-size", type=int, default=1 << 20, help="largest inbound frame, in bytes"
    )
    return parser.parse_args(argv)


async def serve_until_signalled(server: ChpServer) -> None:
    """Run `server` until SIGINT or SIGTERM, then shut down cleanly."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.run)
            async for signum in signals:
                log.info("chp.server_stopping", signal=signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    server = ChpServer(
        args.port,
        host=args.host,
        hugz_interval=args.hugz_interval,
        flush_interval=args.flush_interval,
        max_message_size=args.max_message_size,
    )
    trio.run(serve_until_signalled, server)


if __name__ == "__main__":
    main()
