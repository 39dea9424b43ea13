"""The beacon tower: relays node beacons to every node, with endpoints filled in.

Run as `dafka-tower` (`python -m gateway.mesh.tower`).
"""

from __future__ import annotations

import structlog
import trio
import zmq

from gateway.lifecycle import run_node, served, start_command
from gateway.mesh.mesh_node import keep_serving
from gateway.settings.declaration import Command
from gateway.settings.table import MeshSettings
from gateway.zmq_curve import CurveKeys, serve
from gateway.zmq_trio import Socket, subscription_event
from protocol.dafka import TowerBeacon, decode_node_beacon, encode_tower_beacon
from protocol.dafka.beacon import WELCOME
from protocol.errors import DecodeError

log = structlog.get_logger()


async def run_tower(context: zmq.Context, config: MeshSettings, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Relay beacons until cancelled; started once both sockets are bound."""
    keys = CurveKeys.of(config)
    with Socket(context, zmq.XSUB, linger_ms=0) as inbound, Socket(context, zmq.XPUB, linger_ms=0) as outbound:
        serve(inbound.zsock, keys)
        serve(outbound.zsock, keys)
        inbound.zsock.bind(config.tower_sub_address)
        outbound.zsock.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
        outbound.zsock.bind(config.tower_pub_address)
        await inbound.send([subscription_event()])  # everything the nodes' beacon PUBs send
        log.info("tower_started", sub=config.tower_sub_address, pub=config.tower_pub_address)
        task_status.started()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keep_serving, log, _drain_subscriptions, outbound)
            await keep_serving(log, _relay, inbound, outbound)


async def _relay(inbound: Socket, outbound: Socket) -> None:
    while True:
        frames = await inbound.recv()
        try:
            beacon = decode_node_beacon(frames)
        except DecodeError as error:
            log.warning("bad_beacon", reason=error.reason)
            continue
        host = beacon.host or frames[0].get("Peer-Address")
        await outbound.send(encode_tower_beacon(TowerBeacon(beacon.uuid, f"tcp://{host}:{beacon.port}")))


async def _drain_subscriptions(outbound: Socket) -> None:
    """Nodes' subscriptions need no forwarding: the XSUB takes everything."""
    while True:
        await outbound.recv()


def main() -> None:
    loaded = start_command(Command.TOWER, "dafka-tower", "Dafka beacon tower: relays the beacons of mesh nodes.")
    run_node(served, loaded.settings.http, run_tower, loaded.settings.mesh, mesh=loaded.settings.mesh)


if __name__ == "__main__":
    main()
