"""A primary and a backup chp-server: kill -9, fail-over, compare-and-set races, ttl keys."""

import signal
import time
from contextlib import AsyncExitStack

import pytest
import trio
import zmq

from gateway.chp.changes import ServerLost, Synced
from gateway.chp.chp_client import ChpClient, open_chp_client
from gateway.chp.chp_server import ChpServer
from gateway.settings.table import ChpSettings
from gateway.zmq_trio import Socket, is_subscription_event
from protocol.chp import TTL, KVMsg, encode_kvmsg
from protocol.chp.peer import PeerState, State, SyncEnd, encode_peer
from tests.chp.conftest import HUGZ_INTERVAL_MS, PEER_TIMEOUT_MS, logged
from tests.chp.test_chp_client_server import endpoint, next_change, next_deletion, next_update

FAST = {"hugz_timeout": 2.0}
KEY = "/cluster/controller"


async def until(client: ChpClient, condition) -> None:
    """Wait until `condition()` holds, checking after each change the client sees."""
    with client.watch() as changes, trio.fail_after(30):
        while not condition():
            await changes.receive()


async def test_kill_9_of_the_primary_during_a_stream_of_sets_loses_no_acknowledged_one(start_pair):
    servers, primary, _ = await start_pair()
    async with open_chp_client(servers, **FAST) as writer, open_chp_client(servers, "/k/", **FAST) as reader:
        for index in range(300):
            if index == 100:
                await until(writer, lambda: writer.get("/k/99") is not None)
                acknowledged = set(writer.items())
                primary.kill()
            await writer.set(f"/k/{index}", str(index).encode())
        await until(writer, lambda: writer.server == servers[1])
        await writer.set("/k/end", b"end")
        for client in (writer, reader):
            await until(client, lambda client=client: client.get("/k/end") is not None)
        assert reader.server == servers[1]
        assert len(acknowledged) >= 100 and acknowledged <= set(writer.items())
        assert reader.items() == writer.items()


async def test_passive_does_not_take_over_while_the_primary_lives(start_pair):
    servers, primary, _ = await start_pair()
    async with open_chp_client(servers[:1], **FAST) as on_primary, trio.open_nursery() as nursery:
        backup_only = ChpClient(servers[1:], **FAST)
        with backup_only.watch() as changes:
            nursery.start_soon(backup_only.run)
            for _ in range(3):
                await next_change(changes, lambda c: isinstance(c, ServerLost))
            assert backup_only.server is None
            with on_primary.watch() as primary_changes:
                await on_primary.set("/still", b"primary")
                await next_update(primary_changes, "/still")
            primary.kill()
            synced = await next_change(changes, lambda c: isinstance(c, Synced))
        assert synced.server == servers[1]
        assert backup_only.get("/still") == b"primary"
        nursery.cancel_scope.cancel()


async def race(clients, expected: int, during=None) -> list[int]:
    """Every client tries the same compare-and-set; the indexes of those that won.

    `during` runs once the attempts are under way (they may or may not have reached a server).
    """
    outcomes = {}

    async def attempt(index, client):
        outcomes[index] = await client.compare_and_set(KEY, str(index).encode(), expected, timeout=30)

    async with trio.open_nursery() as nursery:
        for index, client in enumerate(clients):
            nursery.start_soon(attempt, index, client)
        if during:
            await trio.lowlevel.checkpoint()
            during()
    return [index for index, won in outcomes.items() if won]


async def rounds_of_races(clients, count: int, kill=None) -> None:
    expected = 0
    for number in range(count):
        [winner] = await race(clients, expected, kill if number == 3 else None)
        sequences = {client.sequence(KEY) for client in clients}
        assert len(sequences) == 1 and sequences.pop() > expected
        assert {client.get(KEY) for client in clients} == {str(winner).encode()}
        expected = clients[0].sequence(KEY)


async def test_exactly_one_client_wins_each_compare_and_set(chp_server, client_options):
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(open_chp_client([endpoint(chp_server)], **client_options))
                   for _ in range(4)]
        await rounds_of_races(clients, 10)
        assert not await clients[0].compare_and_set(KEY, b"stale", 0)


async def test_compare_and_set_whose_outcome_never_shows_times_out(chp_server, client_options):
    async with open_chp_client([endpoint(chp_server)], **client_options) as client:
        with pytest.raises(trio.TooSlowError):
            await client.compare_and_set(KEY, b"never", 99, timeout=0.5)  # no such sequence: dropped
        assert await client.compare_and_set(KEY, b"first", 0, ttl=60)
        assert client.get(KEY) == b"first" and TTL in client.hashmap.entries[KEY].properties


async def test_exactly_one_client_wins_each_compare_and_set_across_a_fail_over(start_pair):
    servers, primary, _ = await start_pair()
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(open_chp_client(servers, **FAST)) for _ in range(4)]
        await rounds_of_races(clients, 8, kill=primary.kill)
        assert {client.server for client in clients} == {servers[1]}


async def test_ttl_keys_survive_a_fail_over_with_their_remaining_time(start_pair):
    servers, primary, _ = await start_pair()
    async with open_chp_client(servers, **FAST) as client:
        with client.watch() as changes:
            await client.set("/lease", b"short", ttl=6)
            await client.set("/long", b"lease", ttl=600)
            await next_update(changes, "/long")
            expiry = client.hashmap.entries["/lease"].properties[TTL]
            primary.kill()
            synced = await next_change(changes, lambda c: isinstance(c, Synced))
            assert synced.server == servers[1]
            assert client.hashmap.entries["/lease"].properties[TTL] == expiry
            await next_deletion(changes, "/lease")
        assert time.time() * 1000 >= int(expiry)
        assert client.get("/long") == b"lease"


def backup_of(port: int, active_port: int) -> ChpServer:
    return ChpServer(ChpSettings(chp_port=port, chp_host="127.0.0.1", chp_hugz_interval_ms=HUGZ_INTERVAL_MS,
                                 chp_role="backup", chp_peer_host="127.0.0.1", chp_peer_port=active_port,
                                 chp_peer_timeout_ms=1000))


async def test_pending_ttl_key_counts_from_when_the_passive_got_it(nursery, free_base_port, client_options):
    # The reference's backup deletes such keys at once on fail-over.
    port, active_port = free_base_port(), free_base_port()
    backup = backup_of(port, active_port)
    context = zmq.Context.instance()
    with Socket(context, zmq.PUB, linger_ms=0) as active, Socket(context, zmq.XPUB, linger_ms=0) as kvset:
        active.zsock.bind(f"tcp://127.0.0.1:{active_port + 3}")
        await nursery.start(backup.run)
        kvset.zsock.connect(f"tcp://127.0.0.1:{port + 2}")
        async with trio.open_nursery() as heartbeats:
            heartbeats.start_soon(_beat_as_active, active, [SyncEnd(0, 0)])
            await _polled(lambda: backup.pair.synced)
            while not is_subscription_event((await kvset.recv())[0]):
                pass
            sent_ms = time.time_ns() // 1_000_000
            await kvset.send(encode_kvmsg(KVMsg("/lease", body=b"x", uuid=bytes(16), properties={TTL: "5"})))
            await _polled(lambda: len(backup.pair.pending))
            pending_ms = time.time_ns() // 1_000_000
            heartbeats.cancel_scope.cancel()
    async with open_chp_client([endpoint(backup)], **client_options) as client:
        expiry = int(client.hashmap.entries["/lease"].properties[TTL])
    assert sent_ms + 5000 <= expiry <= pending_ms + 5000


async def _polled(condition) -> None:
    # Server internals give no event to wait for; they are checked often.
    with trio.fail_after(10):
        while not condition():
            await trio.sleep(0.01)


async def _beat_as_active(active: Socket, answer: list) -> None:
    """Heartbeats of an active peer with an empty hashmap; `answer`: what it sends a syncing passive."""
    while True:
        await active.send_batch([encode_peer(message) for message in (PeerState(State.ACTIVE, 0), *answer)])
        await trio.sleep(0.05)


async def test_passive_that_never_took_the_active_hashmap_does_not_take_over(nursery, free_base_port):
    port, active_port = free_base_port(), free_base_port()
    backup = backup_of(port, active_port)
    with Socket(zmq.Context.instance(), zmq.PUB, linger_ms=0) as active:
        active.zsock.bind(f"tcp://127.0.0.1:{active_port + 3}")
        await nursery.start(backup.run)
        async with trio.open_nursery() as heartbeats:
            heartbeats.start_soon(_beat_as_active, active, [])
            await _polled(lambda: backup.pair.star.state is State.PASSIVE)
            heartbeats.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        client = ChpClient([endpoint(backup)], hugz_timeout=0.5)
        with client.watch() as changes:
            nursery.start_soon(client.run)
            for _ in range(4):  # 2 s: twice the peer timeout
                await next_change(changes, lambda c: isinstance(c, ServerLost))
        assert client.server is None and backup.pair.star.state is State.PASSIVE
        nursery.cancel_scope.cancel()


async def test_primary_paused_past_a_fail_over_yields_to_the_backup_when_it_wakes(start_pair):
    servers, primary, _ = await start_pair()
    async with open_chp_client(servers, **FAST) as client:
        await _set_and_see(client, "/before", b"1")
        primary.send_signal(signal.SIGSTOP)
        await until(client, lambda: client.server == servers[1])
        await _set_and_see(client, "/during", b"2")
        primary.send_signal(signal.SIGCONT)
        await logged(primary, "chp.yielded")
        await logged(primary, "chp.synced_with_active")
        await _set_and_see(client, "/after", b"3")
        assert client.server == servers[1]
        assert client.items() == {"/before": b"1", "/during": b"2", "/after": b"3"}
        async with open_chp_client(servers, **FAST) as late:
            assert late.server == servers[1] and late.items() == client.items()


async def _set_and_see(client: ChpClient, key: str, value: bytes) -> None:
    with client.watch() as changes:
        await client.set(key, value)
        await next_update(changes, key)


async def test_restarted_primary_follows_the_backup_and_takes_over_when_the_backup_dies(
    start_pair, server_process
):
    servers, primary, backup = await start_pair()
    async with open_chp_client(servers, **FAST) as client:
        await _set_and_see(client, "/first", b"1")
        primary.kill()
        primary.wait()
        await until(client, lambda: client.server == servers[1])
        await _set_and_see(client, "/second", b"2")
        options = ["--chp-role", "primary", "--chp-peer-host", "127.0.0.1", "--chp-peer-port", str(servers[1][1]),
                   "--chp-peer-timeout-ms", str(PEER_TIMEOUT_MS)]
        restarted = await server_process(servers[0][1], *options)
        await logged(restarted, "chp.synced_with_active")
        await _set_and_see(client, "/third", b"3")
        backup.kill()
        await until(client, lambda: client.server == servers[0])
        await _set_and_see(client, "/fourth", b"4")
        assert client.items() == {"/first": b"1", "/second": b"2", "/third": b"3", "/fourth": b"4"}


async def test_sets_under_way_when_the_client_gives_its_server_up_go_on_to_the_next(start_pair):
    """The client closes the sockets of a server it gives up while other tasks are sending
    through them: every set still returns, and the ones after the fail-over are applied. The
    tasks set as fast as they can until the client gives the primary up; the set after the
    fail-over is looked for in a snapshot, since the backup then publishes every set it held
    at once, more than a PUB takes before it drops (the CHP updates' own way)."""
    servers, primary, _ = await start_pair()
    async with open_chp_client(servers, **FAST) as client, trio.open_nursery() as nursery:

        async def keep_setting(key: str) -> None:
            while client.server == servers[0]:
                await client.set(key, b"busy")

        for number in range(8):
            nursery.start_soon(keep_setting, f"/busy/{number}")
        primary.kill()
        await until(client, lambda: client.server == servers[1])
        await client.set("/after", b"fail-over")
        with trio.fail_after(10):
            while True:
                async with open_chp_client(servers[1:], **FAST) as late:
                    if late.get("/after") == b"fail-over":
                        break
                await trio.sleep(0.1)
