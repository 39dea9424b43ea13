"""CHP servers and clients talking over real zmq sockets on 127.0.0.1."""

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trio
import zmq

from gateway.chp.changes import ServerLost, Synced, Update
from gateway.chp.chp_client import open_chp_client
from gateway.chp.chp_server import ChpServer
from gateway.settings.table import ChpSettings
from gateway.zmq_trio import Socket
from protocol.chp import TTL, KVMsg


def endpoint(server):
    return ("127.0.0.1", server.port)


async def next_change(changes, wanted):
    with trio.fail_after(10):
        async for change in changes:
            if wanted(change):
                return change


async def next_update(changes, key: str) -> Update:
    return await next_change(changes, lambda c: isinstance(c, Update) and c.key == key)


async def next_deletion(changes, key: str) -> Update:
    return await next_change(
        changes, lambda c: isinstance(c, Update) and c.key == key and c.value is None
    )


async def test_late_client_gets_snapshot_then_live_updates(chp_server, client_options):
    servers = [endpoint(chp_server)]
    async with open_chp_client(servers, **client_options) as writer:
        with writer.watch() as changes:
            await writer.set("/a/one", b"1")
            await writer.set("/b/two", b"2")
            await writer.set("/a/three", b"3")
            await writer.delete("/a/three")
            assert (await next_update(changes, "/a/three")).value == b"3"
            assert (await next_update(changes, "/a/three")).value is None
        async with open_chp_client(servers, "/a/", **client_options) as reader:
            assert reader.items() == {"/a/one": b"1"}
            with reader.watch() as changes:
                await writer.set("/b/ignored", b"x")
                await writer.set("/a/one", b"one")
                update = await next_update(changes, "/a/one")
            assert update.value == b"one"
            assert update.sequence == chp_server.hashmap.sequence
            assert "/b/ignored" not in reader.items()


async def test_ttl_key_expires_and_every_client_sees_the_deletion(chp_server, client_options):
    servers = [endpoint(chp_server)]
    async with (
        open_chp_client(servers, **client_options) as first,
        open_chp_client(servers, "/tmp/", **client_options) as second,
    ):
        with first.watch() as first_changes, second.watch() as second_changes:
            before_ms = time.time_ns() // 1_000_000
            await first.set("/tmp/lease", b"held", ttl=0.5)
            await first.set("/keep", b"kept")
            created = await next_update(second_changes, "/tmp/lease")
            expiry = int(second.hashmap.entries["/tmp/lease"].properties[TTL])
            assert before_ms + 500 <= expiry <= time.time() * 1000 + 500
            for changes in (first_changes, second_changes):
                deleted = await next_deletion(changes, "/tmp/lease")
                assert deleted.sequence > created.sequence
        assert first.items() == {"/keep": b"kept"}
        assert second.items() == {}


async def test_killed_server_is_detected_and_client_fails_over(
    nursery, server_process, make_server, free_base_port, client_options
):
    doomed_port = free_base_port()
    doomed = await server_process(doomed_port)
    backup = make_server()
    await nursery.start(backup.run)
    servers = [("127.0.0.1", doomed_port), endpoint(backup)]
    async with open_chp_client(servers, **client_options) as client:
        assert client.server == servers[0]
        with client.watch() as changes:
            doomed.kill()
            lost = await next_change(changes, lambda c: isinstance(c, ServerLost))
            assert lost.server == servers[0]
            synced = await next_change(changes, lambda c: isinstance(c, Synced))
            assert synced.server == servers[1]
            await client.set("/after", b"failover")
            assert (await next_update(changes, "/after")).value == b"failover"


async def test_restarted_server_is_noticed_by_its_sequence(make_server, client_options):
    server = make_server()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        async with open_chp_client([endpoint(server)], **client_options) as client:
            with client.watch() as changes:
                await client.set("/k", b"old")
                await next_update(changes, "/k")
                nursery.cancel_scope.cancel()
                await trio.sleep(0)
            restarted = make_server(server.port)
            async with trio.open_nursery() as nursery:
                await nursery.start(restarted.run)
                with client.watch() as changes:
                    lost = await next_change(changes, lambda c: isinstance(c, ServerLost))
                    assert "restarted" in lost.reason
                    await next_deletion(changes, "/k")
                    await next_change(changes, lambda c: isinstance(c, Synced))
                nursery.cancel_scope.cancel()


async def test_malformed_updates_are_dropped_and_server_keeps_serving(
    chp_server, client_options
):
    with zmq.Context.instance().socket(zmq.PUB) as rogue:
        rogue.linger = 0
        rogue.connect(f"tcp://127.0.0.1:{chp_server.port + 2}")
        await trio.sleep(0.2)
        for frames in (
            [b"only one"],
            [b"k", b"short", b"", b"", b"v"],
            [b"HUGZ", bytes(8), b"", b"", b"x"],
            [b"k", bytes(8), b"", b"ttl=soon\n", b"v"],
            [b"k", bytes(8), b"", b"", bytes(chp_server.max_message_size + 1)],
        ):
            rogue.send_multipart(frames)
        async with open_chp_client([endpoint(chp_server)], **client_options) as client:
            with client.watch() as changes:
                await client.set("/fine", b"yes")
                await next_update(changes, "/fine")
    assert chp_server.hashmap.sequence == 1


async def test_client_drops_updates_not_newer_than_what_it_holds(free_base_port, client_options):
    port = free_base_port()
    with hand_driven_server(port) as (snapshot, publisher, collector):
        async with trio.open_nursery() as server_tasks:
            server_tasks.start_soon(_send_hugz, publisher)
            server_tasks.start_soon(_answer_snapshot, snapshot)
            # A SUB socket forwards its subscription to a new peer only when
            # it is used, so the collector must be read for clients to sync.
            server_tasks.start_soon(_drain, collector)
            async with open_chp_client([("127.0.0.1", port)], **client_options) as client:
                assert client.items() == {"/k": b"five"}
                with client.watch() as changes:
                    for sequence, body in ((4, b"stale"), (5, b"same"), (6, b"six")):
                        await publisher.send([b"/k", seq(sequence), b"", b"", body])
                    update = await next_update(changes, "/k")
                assert (update.value, update.sequence) == (b"six", 6)
            server_tasks.cancel_scope.cancel()


@contextmanager
def hand_driven_server(port: int) -> Iterator[tuple[Socket, Socket, Socket]]:
    """A server's snapshot, publisher and collector sockets, bound on `port`..`port` + 2, for a
    test to drive frame by frame as the C reference sends them."""
    context = zmq.Context.instance()
    with (
        Socket(context, zmq.ROUTER, linger_ms=0) as snapshot,
        Socket(context, zmq.PUB, linger_ms=0) as publisher,
        Socket(context, zmq.SUB, linger_ms=0) as collector,
    ):
        collector.zsock.setsockopt(zmq.SUBSCRIBE, b"")
        for offset, socket in enumerate((snapshot, publisher, collector)):
            socket.zsock.bind(f"tcp://127.0.0.1:{port + offset}")
        yield snapshot, publisher, collector


async def _send_hugz(publisher):
    while True:
        await publisher.send([b"HUGZ", seq(5), b"", b"", b""])
        await trio.sleep(0.05)


async def _drain(collector):
    while True:
        await collector.recv()


async def _answer_snapshot(snapshot):
    identity, *request = await snapshot.recv()
    assert [bytes(frame) for frame in request] == [b"ICANHAZ?", b""]
    await snapshot.send([identity, b"/k", seq(5), b"", b"", b"five"])
    await snapshot.send([identity, b"KTHXBAI", seq(5), b"", b"", b""])


def seq(number: int) -> bytes:
    return number.to_bytes(8, "big")


async def test_a_value_is_decoded_once_and_again_only_when_it_changes(chp_server, client_options):
    """What the cluster decodes from the mirror (a key per partition, read whole at each change)
    is kept per value: the same value is not decoded twice, a new or deleted one is seen at once."""
    decodings = []

    def decode(body: bytes) -> str:
        decodings.append(body)
        return body.decode()

    async with open_chp_client([endpoint(chp_server)], **client_options) as client:
        with client.watch() as changes:
            await client.set("/p/1", b"one")
            await client.set("/p/2", b"two")
            await client.set("/q/1", b"other")
            await next_update(changes, "/q/1")
            assert client.keys_under("/p/") == ["/p/1", "/p/2"]
            assert [client.decoded(key, decode) for key in client.keys_under("/p/")] * 2 == ["one", "two"] * 2
            assert decodings == [b"one", b"two"]
            before = client.changes
            await client.set("/p/1", b"uno")
            await next_update(changes, "/p/1")
            assert client.changes > before
            assert client.decoded("/p/1", decode) == "uno"
            await client.delete("/p/2")
            await next_deletion(changes, "/p/2")
            assert client.decoded("/p/2", decode) is None
        assert decodings == [b"one", b"two", b"uno"]


async def test_a_client_that_falls_behind_loses_no_update(chp_server, client_options):
    """Updates far past ZeroMQ's default high-water marks, published while a client reads
    nothing: it gets every one once it reads again (the Clone pattern's reference ran on
    ZeroMQ 2, whose queues had no limit; a mirror that silently misses an update is wrong
    until its next snapshot)."""
    servers = [endpoint(chp_server)]
    count, value = 4000, bytes(20_000)
    async with open_chp_client(servers, **client_options) as writer, \
            open_chp_client(servers, **client_options) as reader:
        reading = trio.Event()
        receive = reader._receive

        async def held(socket, what):
            await reading.wait()
            return await receive(socket, what)

        reader._receive = held
        with trio.fail_after(20):
            for number in range(count):
                await writer.set(f"/k/{number}", value)
            while chp_server.outbox.published < chp_server.hashmap.sequence or len(chp_server.hashmap.entries) < count:
                await trio.sleep(0.05)
            reading.set()
            while len(reader.keys_under("/k/")) < count:
                await trio.sleep(0.05)


async def test_a_client_that_missed_updates_takes_a_snapshot_again(free_base_port, client_options):
    """Update 7 never reaches the client (as when the server dropped its connection and ZeroMQ
    made it again): update 8, and a HUGZ past what it holds, send it for a new snapshot."""
    port = free_base_port()
    state = {"sequence": 5, "keys": {b"/k": (5, b"five")}}
    with hand_driven_server(port) as (snapshot, publisher, collector):

        async def answer_snapshots():
            while True:
                identity, *_ = await snapshot.recv()
                for key, (sequence, body) in state["keys"].items():
                    await snapshot.send([identity, key, seq(sequence), b"", b"", body])
                await snapshot.send([identity, b"KTHXBAI", seq(state["sequence"]), b"", b"", b""])

        async def send_hugz():
            while True:
                await publisher.send([b"HUGZ", seq(state["sequence"]), b"", b"", b""])
                await trio.sleep(0.05)

        async def publish(key: bytes, sequence: int, body: bytes):
            state["sequence"], state["keys"][key] = sequence, (sequence, body)
            await publisher.send([key, seq(sequence), b"", b"", body])

        async with trio.open_nursery() as server_tasks:
            server_tasks.start_soon(send_hugz)
            server_tasks.start_soon(answer_snapshots)
            server_tasks.start_soon(_drain, collector)
            async with open_chp_client([("127.0.0.1", port)], **client_options) as client:
                with client.watch() as changes:
                    await publish(b"/k", 6, b"six")
                    assert (await next_update(changes, "/k")).value == b"six"
                    state["sequence"], state["keys"][b"/j"] = 7, (7, b"seven")  # published, never received
                    await publish(b"/k", 8, b"eight")
                    assert (await next_update(changes, "/j")).value == b"seven"
                assert client.items() == {"/k": b"eight", "/j": b"seven"}
            server_tasks.cancel_scope.cancel()


STOPPED_CLIENT = """
import sys, time, zmq
subscriber = zmq.Context.instance().socket(zmq.SUB)
subscriber.setsockopt(zmq.SUBSCRIBE, b"")
subscriber.connect(sys.argv[1])
subscriber.recv_multipart()  # connected: a HUGZ came
print("subscribed", flush=True)
time.sleep(600)
"""


def established_to(port: int) -> int:
    """TCP connections in state ESTABLISHED whose local port is `port` (the server's side)."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for line in lines if int(line.split()[1].split(":")[1], 16) == port and line.split()[3] == "01")


async def test_the_server_drops_a_stopped_client_and_what_it_did_not_read(free_base_port):
    port = free_base_port()
    server = ChpServer(ChpSettings(chp_port=port, chp_host="127.0.0.1", chp_hugz_interval_ms=100,
                                   chp_client_timeout_ms=1000))
    client = subprocess.Popen([sys.executable, "-c", STOPPED_CLIENT, f"tcp://127.0.0.1:{port + 1}"],
                              stdout=subprocess.PIPE)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            assert await trio.to_thread.run_sync(client.stdout.readline) == b"subscribed\n"
            assert established_to(port + 1) == 1
            client.send_signal(signal.SIGSTOP)
            with trio.fail_after(10):
                while established_to(port + 1):
                    await server.enqueue(server.hashmap.accept(KVMsg(key="/k", body=bytes(10_000)), 0))
                    await trio.sleep(0.1)
            nursery.cancel_scope.cancel()
    finally:
        client.kill()
        client.wait()
