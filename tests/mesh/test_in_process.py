"""The nodes as trio tasks in one process: producer -> store -> ACK, consumer delivery."""

import pytest
import trio

from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import Producer
from gateway.mesh.local_peers import share_inproc
from gateway.mesh.peer_table import Peer
from gateway.mesh.store.store_node import existing_store_uuid, run_store
from gateway.mesh.tower import run_tower
from gateway.settings.table import StoreSettings
from gateway.zmq_trio import zmq_context
from tests.mesh.conftest import fast_config
from tests.mesh.memory_log import MemoryLog


@pytest.mark.parametrize("over_inproc", [False, True])
async def test_records_are_acked_delivered_and_gaps_fetched(tmp_path, over_inproc):
    """Over TCP, and with the nodes paired over inproc (local_peers.py), where ACKs still
    count for the store that sent them though inproc carries no sender."""
    config = fast_config(consumer_offset_reset="earliest")
    store = StoreSettings(store_db=tmp_path / "store")
    log = MemoryLog()
    dropped = {3, 4, 10}
    with zmq_context() as context, trio.fail_after(20):
        if over_inproc:
            share_inproc(context)
        producer = Producer(context, config, drop=lambda _uuid, sequence: sequence in dropped)
        consumer = Consumer(context, config, ["orders"])
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                await nursery.start(run_store, context, config, store, log)
                await nursery.start(producer.run)
                await nursery.start(consumer.run)
                partition = producer.host("orders", next_sequence=0)
                while len(producer.node.peers) < 3:  # both store nodes and the consumer
                    await trio.sleep(0.05)
                await trio.sleep(0.3)  # subscriptions travel after the connections
                for i in range(20):
                    await partition.publish(b"record %d" % i)
                await partition.wait_acked(19, stores=1)
                got = []
                async for deliveries in consumer.deliveries:
                    got += [(delivery.sequence, bytes(delivery.content)) for delivery in deliveries]
                    if len(got) >= 20:
                        break
                assert got == [(i, b"record %d" % i) for i in range(20)]
                assert [e.sequence for e in log.entries[("orders", partition.uuid)]] == list(range(20))
                assert [(s, bytes(c)) for s, c in await consumer.read("orders", partition.uuid, 5, 10)] == [
                    (i, b"record %d" % i) for i in range(5, 15)
                ]
                writer = existing_store_uuid(store.store_db)
                assert partition.acked_by(writer) == 19
                assert (producer.node.partner == writer) is over_inproc
                assert (consumer.node.partner is not None) is over_inproc  # the store's reader
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
            consumer.close()


async def test_a_late_consumer_learns_heads_from_the_store_and_replays(tmp_path):
    """HELLO handshake and GET-HEADS: with its producer gone, only the store knows the partition."""
    config = fast_config(consumer_offset_reset="earliest")
    store = StoreSettings(store_db=tmp_path / "store")
    with zmq_context() as context, trio.fail_after(20):
        producer = Producer(context, config)
        consumer = Consumer(context, config, ["orders"])
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                writer, reader = await nursery.start(run_store, context, config, store, MemoryLog())
                await nursery.start(producer.run)
                partition = producer.host("orders")
                for i in range(5):
                    await partition.publish(b"record %d" % i)
                await partition.wait_acked(4, stores=1)
                producer.release(partition)  # no more HEADs or FETCH answers from the producer
                await nursery.start(consumer.run)
                await consumer.wait_for_stores(1)
                assert consumer.stores() == {reader.node.uuid}
                assert await consumer.heads("orders") == {"orders": {partition.uuid: 4}}
                # HEADS-DONE from the only store ends the wait, long before this window (fail_after above)
                assert await consumer.heads("orders", "empty", timeout=60) == {
                    "orders": {partition.uuid: 4}, "empty": {}}
                got = []
                async for deliveries in consumer.deliveries:
                    got += [(delivery.sequence, bytes(delivery.content)) for delivery in deliveries]
                    if len(got) >= 5:
                        break
                assert got == [(i, b"record %d" % i) for i in range(5)]
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
            consumer.close()


async def test_a_store_ahead_of_its_producer_never_acknowledges_its_new_records(tmp_path):
    """A partition hosted again from sequence 0 over a store holding 0..4 (its heads were
    missed): the store's ACKs are for its own records, so new writes must wait, not pass."""
    from structlog.testing import capture_logs

    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store")
    with zmq_context() as context, trio.fail_after(20), capture_logs() as logs:
        producer = Producer(context, config)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                await nursery.start(run_store, context, config, store, MemoryLog())
                await nursery.start(producer.run)
                first_life = producer.host("orders")
                for i in range(5):
                    await first_life.publish(b"record %d" % i)
                await first_life.wait_acked(4, stores=1)
                producer.release(first_life)
                second_life = producer.host("orders", uuid=first_life.uuid, next_sequence=0)
                await second_life.publish(b"not the store's record 0")
                with trio.move_on_after(2) as waiting:
                    await second_life.wait_acked(0, stores=1)
                assert waiting.cancelled_caught
                assert any(entry["event"] == "ack_beyond_published" for entry in logs)
                nursery.cancel_scope.cancel()
        finally:
            producer.close()


async def test_a_store_that_expired_the_consumer_counts_again_once_it_reconnects(tmp_path):
    """The store's reader expires a consumer (it was paused) and reconnects to it when it beacons
    again: its subscription comes anew, its greeting does not (the consumer's connection to the
    reader stayed), and the consumer counts the store connected both ways again."""
    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store")
    with zmq_context() as context, trio.fail_after(20):
        consumer = Consumer(context, config, ())
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                _, reader = await nursery.start(run_store, context, config, store, MemoryLog())
                await nursery.start(consumer.run)
                await consumer.wait_for_stores(1)
                # Its beacons are ignored until the consumer saw the subscription go: a reconnection
                # before that would overlap the old one, and ZeroMQ tells of neither.
                ignored = reader.node.ignored_peers
                reader.node.ignored_peers = ignored | {consumer.node.uuid}
                reader.node._disconnect(reader.node.peers.forget(consumer.node.uuid))  # as its expiry does
                while consumer.stores():
                    await trio.sleep(0.01)
                reader.node.ignored_peers = ignored
                while consumer.node.uuid not in reader.node.peers:  # its next beacon
                    await trio.sleep(0.01)
                await consumer.wait_for_stores(1)
                assert consumer.stores() == {reader.node.uuid}
                nursery.cancel_scope.cancel()
        finally:
            consumer.close()


async def test_a_store_restarted_in_the_process_is_paired_again(tmp_path):
    """The store's writer keeps its UUID across a restart but publishes on a new inproc
    endpoint: the producer drops the old link and ACKs come over the new one."""
    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store")
    with zmq_context() as context, trio.fail_after(30):
        share_inproc(context)
        producer = Producer(context, config)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                partition = producer.host("orders", next_sequence=0)
                await nursery.start(producer.run)
                for first in (0, 10):
                    async with trio.open_nursery() as store_nursery:
                        store_writer, _ = await store_nursery.start(run_store, context, config, store)
                        writer = store_writer.node.uuid
                        while not producer.node.peers.get(writer, Peer("", 0)).endpoint.endswith(
                                f":{store_writer.node.port}"):  # the restarted writer's beacon heard
                            await trio.sleep(0.05)
                        assert producer.node.partner == writer
                        await trio.sleep(0.3)  # subscriptions travel after the connections
                        for i in range(first, first + 10):
                            await partition.publish(b"record %d" % i)
                        await partition.wait_acked(first + 9, stores=1)
                        assert partition.acked_by(writer) == first + 9
                        store_nursery.cancel_scope.cancel()
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
