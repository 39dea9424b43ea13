"""Peers tracked by identity and endpoint together: a reused port disconnects no live peer;
a ZeroMQ error or an unusable endpoint stops no node."""

import errno
from contextlib import asynccontextmanager
from types import SimpleNamespace

import structlog
import trio
import zmq
from structlog.testing import capture_logs

from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.mesh.peer_table import PeerTable, RelayingClock, Seen
from gateway.mesh.tower import run_tower
from gateway.settings.table import MeshSettings
from gateway.zmq_trio import Socket, zmq_context
from protocol.dafka import NodeBeacon, Record, encode, encode_node_beacon, subscription
from tests.mesh.conftest import fast_config, on_towers

A, B, C, D = "A" * 32, "B" * 32, "C" * 32, "D" * 32
E1, E2 = "tcp://127.0.0.1:5001", "tcp://127.0.0.1:5002"
DEADLINE_S = 30.0


def connected(table: PeerTable, events: list[Seen]) -> dict[str, int]:
    """How many connections the socket holds per endpoint, replaying what the table asked for."""
    sockets: dict[str, int] = {}
    for seen in events:
        if seen.disconnect:
            sockets[seen.disconnect] -= 1
        if seen.connect:
            sockets[seen.connect] = sockets.get(seen.connect, 0) + 1
    return {endpoint: count for endpoint, count in sockets.items() if count}


def test_a_new_peer_is_connected_once_and_refreshed_by_its_beacons():
    table = PeerTable()
    assert table.saw(A, E1, 1.0) == Seen(appeared=True, connect=E1)
    assert table.saw(A, E1, 2.0) == Seen()
    assert table[A].last_seen == 2.0 and list(table) == [A] and A in table


def test_a_newcomer_on_a_dead_peers_endpoint_takes_it_over_without_reconnecting():
    table = PeerTable()
    table.saw(A, E1, 1.0)
    assert table.saw(B, E1, 2.0) == Seen(appeared=True, replaced=A)
    assert A not in table and table.owner(E1) == B
    assert table.silent_since(3.0) == [(B, E1)]  # A's expiry can no longer disconnect B


def test_a_replaced_peer_beaconing_again_takes_its_endpoint_back():
    table = PeerTable()
    events = [table.saw(A, E1, 1.0), table.saw(B, E1, 2.0), table.saw(A, E1, 3.0)]
    assert events[-1] == Seen(appeared=True, replaced=B)
    assert connected(table, events) == {E1: 1}


def test_a_peer_that_moves_is_disconnected_from_its_old_endpoint():
    table = PeerTable()
    table.saw(A, E1, 1.0)
    assert table.saw(A, E2, 2.0) == Seen(appeared=True, connect=E2, disconnect=E1)
    assert table.owner(E1) is None and table.owner(E2) == A


def test_a_peer_moving_onto_an_owned_endpoint_replaces_its_owner():
    table = PeerTable()
    events = [table.saw(A, E1, 1.0), table.saw(B, E2, 1.0), table.saw(A, E2, 2.0)]
    assert events[-1] == Seen(appeared=True, disconnect=E1, replaced=B)
    assert connected(table, events) == {E2: 1}
    assert dict(table.items()).keys() == {A}


def test_silent_peers_expire_and_each_endpoint_is_disconnected_once():
    table = PeerTable()
    events = [table.saw(A, E1, 1.0), table.saw(B, E1, 5.0), table.saw(C, E2, 9.0)]
    assert table.silent_since(6.0) == [(B, E1)]
    assert table.forget(B) == E1
    assert table.silent_since(6.0) == [] and table.owner(E1) is None
    events.append(Seen(disconnect=E1))
    assert connected(table, events) == {E2: 1}
    assert len(table) == 1


def test_a_beacon_relayed_by_two_towers_connects_once_and_a_late_copy_disconnects_nothing():
    """Each tower relays every beacon: the second copy only refreshes the peer. A slow tower's copy
    of a dead peer's last beacon, after a newcomer took its endpoint over, hands the endpoint back
    and forth without touching the connection."""
    table = PeerTable()
    events = [table.saw(A, E1, 1.0), table.saw(A, E1, 1.1)]
    assert events[1] == Seen() and table[A].last_seen == 1.1
    events += [table.saw(B, E1, 5.0), table.saw(A, E1, 5.1), table.saw(B, E1, 5.2), table.saw(B, E1, 5.3)]
    assert events[-1] == Seen()
    assert connected(table, events) == {E1: 1} and list(table) == [B]


def test_the_relaying_clock_counts_a_gap_between_relays_as_one_interval_at_most():
    """Towers down for a minute: a peer heard just before has a whole timeout of relaying after
    they are back, though the first relay comes before its beacon."""
    clock, table = RelayingClock(longest_gap=1.0), PeerTable()
    assert [clock.relayed(now) for now in (100.0, 100.5, 102.0)] == [0.0, 0.5, 1.5]
    table.saw(A, E1, clock.time)
    assert clock.relayed(162.0) == 2.5 and table.silent_since(clock.time - 4.0) == []
    assert [clock.relayed(now) for now in (165.0, 166.0, 167.0)] == [3.5, 4.5, 5.5]
    assert table.silent_since(clock.time - 4.0) == []
    assert clock.relayed(167.5) == 6.0 and table.silent_since(clock.time - 4.0) == [(A, E1)]


def test_churn_on_few_ports_never_disconnects_twice_nor_a_live_peer():
    """Nodes come and go on two ports; the socket always holds exactly one connection per owned endpoint."""
    table = PeerTable()
    events: list[Seen] = []
    identities = [f"{n:032X}" for n in range(12)]
    for tick, uuid in enumerate(identities):
        events.append(table.saw(uuid, (E1, E2)[tick % 2], float(tick)))
        for expired, endpoint in table.silent_since(tick - 3.0):
            assert table.forget(expired) == endpoint
            events.append(Seen(disconnect=endpoint))
        owned = {table[peer].endpoint for peer in table}
        assert connected(table, events) == dict.fromkeys(owned, 1)


# A real node and towers in this process; "peers" are beacons sent to the towers and a PUB the test binds.

async def beaconing(out: Socket, uuid: str, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED):
    """Beacon as node `uuid` at host:port until the scope it starts with is cancelled."""
    with trio.CancelScope() as scope:
        task_status.started(scope)
        while True:
            await out.send(encode_node_beacon(NodeBeacon(uuid, host, port)))
            await trio.sleep(0.05)


async def until(condition, what: str) -> None:
    with trio.move_on_after(DEADLINE_S):
        while not condition():
            await trio.sleep(0.02)
        return
    raise AssertionError(f"not within {DEADLINE_S} s: {what}")


async def hears(node: MeshNode, data: Socket) -> None:
    """Until `node` receives what `data` publishes (its subscription needs a moment to arrive)."""
    with trio.move_on_after(DEADLINE_S):
        while True:
            await data.send(encode(Record(A, "peers", 0, b"hello")))
            with trio.move_on_after(0.05):
                if await node.receive(10):
                    return
    raise AssertionError("the node does not hear the peer")


async def tower_until_stopped(context, config, *, task_status=trio.TASK_STATUS_IGNORED):
    """A tower until the cancel scope it starts with is cancelled: its sockets close, as if it were killed."""
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            await nursery.start(run_tower, context, config)
            task_status.started(scope)


@asynccontextmanager
async def mesh_with_one_node(config, towers: list[MeshSettings] | None = None):
    """The towers (`config`'s own by default), a node on `config` subscribed to RECORDs, and fake
    peers: beacons sent to every tower and a data PUB on `port`; `stop_tower(n)` closes tower n
    and `start_tower(n)` starts it again on the same endpoints."""
    towers = towers or [config]
    with zmq_context() as context:
        node = MeshNode(context, config, kind="test")
        node.subscribe(subscription(Record))
        with Socket(context, zmq.PUB, linger_ms=0) as beacons, Socket(context, zmq.PUB, linger_ms=0) as data:
            for tower in towers:
                beacons.zsock.connect(tower.tower_sub_address)
            data.zsock.bind("tcp://127.0.0.1:*")
            port = int(data.zsock.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
            try:
                async with trio.open_nursery() as nursery:
                    running = {}

                    async def start_tower(number: int) -> None:
                        running[number] = await nursery.start(tower_until_stopped, context, towers[number])

                    for number in range(len(towers)):
                        await start_tower(number)
                    await nursery.start(node.run)

                    async def beacon(uuid: str, host: str = "127.0.0.1") -> trio.CancelScope:
                        return await nursery.start(beaconing, beacons, uuid, host, port)

                    yield SimpleNamespace(node=node, beacon=beacon, data=data, port=port, start_tower=start_tower,
                                          stop_tower=lambda number: running.pop(number).cancel())
                    nursery.cancel_scope.cancel()
            finally:
                node.close()


async def test_a_new_node_on_a_dead_peers_port_stays_connected_and_expiries_never_fail():
    config = fast_config(beacon_timeout_ms=500)
    with capture_logs() as logs:
        async with mesh_with_one_node(config) as mesh:
            first = await mesh.beacon(A)
            await until(lambda: A in mesh.node.peers, "A appears")
            await hears(mesh.node, mesh.data)
            first.cancel()  # A exits; B binds the port A freed
            second = await mesh.beacon(B)
            await until(lambda: B in mesh.node.peers and A not in mesh.node.peers, "B takes the endpoint over")
            await trio.sleep(3 * config.beacon_timeout_ms / 1000)  # well past the moment A would have expired
            await hears(mesh.node, mesh.data)
            second.cancel()
            await until(lambda: B not in mesh.node.peers, "B expires")
            await mesh.beacon(C)  # the same port again, after its disconnect
            await until(lambda: C in mesh.node.peers, "C appears")
            await hears(mesh.node, mesh.data)
    events = [entry["event"] for entry in logs]
    assert events.count("peer_expired") == 1 and events.count("peer_replaced") == 1
    assert not [entry for entry in logs if entry["log_level"] in ("error", "critical")]


async def test_a_peer_is_heard_while_any_tower_relays_it_and_expires_only_by_a_live_towers_clock():
    """Two towers, each relaying every beacon: peers appear once. One tower stopped, the other's
    relays keep the live peers, expire the silent one and bring a newcomer; both stopped, no peer
    expires (as with one tower); one started again, expiry and discovery go on through it."""
    towers = [fast_config(), fast_config()]
    config = on_towers(towers, beacon_timeout_ms=500)
    with capture_logs() as logs:
        async with mesh_with_one_node(config, towers) as mesh:
            await mesh.beacon(A, "127.0.0.2")
            silent = await mesh.beacon(B, "127.0.0.3")
            await until(lambda: {A, B} <= set(mesh.node.peers), "A and B appear")
            mesh.stop_tower(0)
            silent.cancel()
            await until(lambda: B not in mesh.node.peers, "B expires, by the other tower's clock")
            late = await mesh.beacon(C)  # the one peer whose data the node can hear
            await until(lambda: C in mesh.node.peers, "C appears through the other tower")
            await hears(mesh.node, mesh.data)
            assert A in mesh.node.peers
            mesh.stop_tower(1)
            late.cancel()
            await trio.sleep(3 * config.beacon_timeout_ms / 1000)  # no tower: nobody's silence is counted
            assert set(mesh.node.peers) == {A, C}
            await mesh.start_tower(0)
            await until(lambda: C not in mesh.node.peers, "C expires, by the restarted tower's clock")
            await mesh.beacon(D, "127.0.0.4")
            await until(lambda: D in mesh.node.peers, "D appears through the restarted tower")
            assert A in mesh.node.peers
    appeared = [entry["peer"] for entry in logs if entry["event"] == "peer_appeared"]
    assert sorted(appeared) == [A, B, C, D]
    assert [entry["peer"] for entry in logs if entry["event"] == "peer_expired"] == [B, C]
    assert not [entry for entry in logs if entry["event"] == "peer_replaced" or entry["log_level"] == "error"]


async def test_an_unusable_endpoint_is_logged_once_and_skipped():
    with capture_logs() as logs:
        async with mesh_with_one_node(fast_config()) as mesh:
            await mesh.beacon(A, "*")
            await mesh.beacon(B, "garbage host")
            await until(lambda: sum(entry["event"] == "peer_unreachable" for entry in logs) == 2, "both skipped")
            await mesh.beacon(C)
            await until(lambda: C in mesh.node.peers, "C appears")
            await hears(mesh.node, mesh.data)
            await trio.sleep(0.5)  # A and B beacon on
            assert set(mesh.node.peers) == {C}
    unreachable = [entry for entry in logs if entry["event"] == "peer_unreachable"]
    assert sorted(entry["endpoint"] for entry in unreachable) == [f"tcp://*:{mesh.port}",
                                                                  f"tcp://garbage host:{mesh.port}"]
    assert all(entry["exc_info"] for entry in unreachable)


async def test_a_zeromq_error_is_logged_with_its_traceback_and_the_loop_goes_on():
    calls = []

    async def loop():
        calls.append(None)
        if len(calls) == 1:
            raise zmq.ZMQError(errno.ENOENT)

    with capture_logs() as logs:
        await keep_serving(structlog.get_logger(), loop)
    assert len(calls) == 2
    assert [(entry["event"], entry["loop"], entry["exc_info"]) for entry in logs] == [
        ("mesh_loop_failed", "loop", True)]
