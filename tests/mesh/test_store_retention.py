"""A store's own retention and the discard directives it applies, in one process."""


import trio

from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import Producer
from gateway.mesh.store.store_log import StoreLog
from gateway.mesh.store.store_node import run_store
from gateway.mesh.tower import run_tower
from gateway.settings.table import StoreSettings
from gateway.zmq_trio import zmq_context
from protocol.journal.discard_directive import DISCARD_SUBJECT, Discard, encode_discard
from tests.mesh.conftest import fast_config

ENTRY_BYTES = 24 + 100
SEGMENT_BYTES = 10 * ENTRY_BYTES
ADDRESS = "0123456789ABCDEF0123456789ABCDEF"


async def wait_until(condition) -> None:
    while not condition():
        await trio.sleep(0.02)


async def test_store_retention_runs_every_interval_and_spares_the_gateway_journals(tmp_path):
    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store", store_segment_bytes=SEGMENT_BYTES,
                          store_retention_bytes=0, store_retention_check_interval_ms=50)
    with StoreLog(tmp_path / "store" / "log", segment_bytes=SEGMENT_BYTES) as log:
        for subject in ("events", "__dafka_gateway_metadata"):
            for sequence in range(35):
                log.append(subject, ADDRESS, sequence, bytes(100), 0)
    with zmq_context() as context, trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_tower, context, config)
            writer, _ = await nursery.start(run_store, context, config, store)
            await wait_until(lambda: writer.log.first("events", ADDRESS) == 30)
            assert writer.log.first("__dafka_gateway_metadata", ADDRESS) == 0
            nursery.cancel_scope.cancel()


async def test_a_store_applies_discard_directives_as_it_writes_them(tmp_path):
    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store", store_segment_bytes=SEGMENT_BYTES)
    with zmq_context() as context, trio.fail_after(20):
        producer = Producer(context, config)
        consumer = Consumer(context, config, ())
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                writer, _ = await nursery.start(run_store, context, config, store)
                await nursery.start(producer.run)
                await nursery.start(consumer.run)
                await consumer.wait_for_stores(1)
                events = producer.host("events", next_sequence=0)
                journal = producer.host("__dafka_gateway_metadata", next_sequence=0)
                for partition in (events, journal):
                    await partition.publish_many([bytes(100)] * 45)
                    await partition.wait_acked(44, stores=1)
                discards = producer.host(DISCARD_SUBJECT, next_sequence=0)
                await discards.publish_many([
                    b"{not json", b'{"subject": "events"}', b"[" * 100_000,
                    encode_discard(Discard("__dafka_gateway_metadata", journal.uuid, 40)),  # an older generation
                    encode_discard(Discard("events", events.uuid, 25)),
                    encode_discard(Discard(DISCARD_SUBJECT, discards.uuid, 6)),  # refused: they go as applied
                ])
                await discards.wait_acked(5, stores=1)
                assert writer.log.first("events", events.uuid) == 20
                assert writer.log.first("__dafka_gateway_metadata", journal.uuid) == 40
                assert writer.log.first(DISCARD_SUBJECT, discards.uuid) < 6  # not emptied
                # Below what the store holds, nothing answers: a read gives up instead of waiting.
                assert await consumer.read("events", events.uuid, 0, 5, timeout=1.0) == []
                got = await consumer.read("events", events.uuid, 20, 25)
                assert [sequence for sequence, _ in got] == list(range(20, 45))
                # Directives are applied when written: their own older segments go too.
                for _ in range(30):
                    await discards.publish(encode_discard(Discard("events", events.uuid, 25)))
                await discards.wait_acked(35, stores=1)
                assert writer.log.first(DISCARD_SUBJECT, discards.uuid) > 0
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
            consumer.close()


async def start_store(nursery, context, config, directory):
    """A store of its own data directory; returns its writer and a function that stops it."""
    scope = trio.CancelScope()
    stopped = trio.Event()

    async def run(task_status):
        with scope:
            store = StoreSettings(store_db=directory, store_segment_bytes=SEGMENT_BYTES)
            await run_store(context, config, store, task_status=task_status)
        stopped.set()

    async def stop():
        scope.cancel()
        await stopped.wait()

    writer, _ = await nursery.start(run)
    return writer, stop


async def test_stores_behind_a_discard_skip_to_the_log_start(tmp_path):
    """As a Kafka follower below the leader's log start resets to it: a store that was down
    while its peers discarded, and a new one, take the partition from there on."""
    config = fast_config()
    with zmq_context() as context, trio.fail_after(30):
        producer = Producer(context, config)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                store_a, _ = await start_store(nursery, context, config, tmp_path / "a")
                store_b, stop_b = await start_store(nursery, context, config, tmp_path / "b")
                await nursery.start(producer.run)
                events = producer.host("events", next_sequence=0)
                await events.publish_many([bytes(100)] * 45)
                await events.wait_acked(44, stores=2)
                await stop_b()
                await events.publish_many([bytes(100)] * 45)
                await events.wait_acked(89, stores=1)  # the producer forgets them: only A holds 45..89
                # Directives never wait for a gap: 0..6 are as good as superseded.
                discards = producer.host(DISCARD_SUBJECT, next_sequence=7)
                await discards.publish(encode_discard(Discard("events", events.uuid, 70)))
                await discards.wait_acked(7, stores=1)
                assert store_a.log.first("events", events.uuid) == 70

                store_b, _ = await start_store(nursery, context, config, tmp_path / "b")
                await events.publish_many([bytes(100)] * 10)
                await events.wait_acked(99, stores=2)
                assert_holds(store_b.log, events.uuid, 70, 99)
                # Nobody holds anything below 70 any more when a new store joins.
                store_c, _ = await start_store(nursery, context, config, tmp_path / "c")
                await events.publish_many([bytes(100)] * 10)
                await events.wait_acked(109, stores=3)
                assert_holds(store_c.log, events.uuid, 70, 109)
                nursery.cancel_scope.cancel()
        finally:
            producer.close()


def assert_holds(log, address: str, first: int, head: int) -> None:
    assert (log.first("events", address), log.head("events", address)) == (first, head)
    got = list(log.read("events", address, first, 1000, 10**6))
    assert [entry.sequence for entry in got] == list(range(first, head + 1))
