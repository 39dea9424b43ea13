"""Stores compacting a partition as a gateway's directive says, over a real mesh."""

import trio

from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import Producer
from gateway.mesh.store.store_node import run_store
from gateway.mesh.tower import run_tower
from gateway.settings.table import StoreSettings
from gateway.zmq_trio import zmq_context
from protocol.journal.discard_directive import DISCARD_SUBJECT, Compaction, Discard, encode_discard
from protocol.records import Codec, Record, RecordBatch, build_batch
from tests.mesh.conftest import fast_config
from tests.mesh.test_store_retention import start_store, wait_until

BATCHES = 30


def versions() -> list[bytes]:
    """Batch i holds key k{i % 4} = v{i} at offset i."""
    return [build_batch([Record(i, i, b"k%d" % (i % 4), b"v%d" % i)], codec=Codec.LZ4) for i in range(BATCHES)]


def values(contents) -> list[list[bytes]]:
    return [[record.value for record in RecordBatch(memoryview(content)).records()] for content in contents]


async def test_every_store_cleans_to_the_same_log_and_serves_it(tmp_path):
    config = fast_config()
    with zmq_context() as context, trio.fail_after(30):
        producer = Producer(context, config)
        consumer = Consumer(context, config, ())
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                writers = []
                for name, segment_bytes in (("a", 500), ("b", 64 << 20)):  # other segment files
                    store = StoreSettings(store_db=tmp_path / name, store_segment_bytes=segment_bytes,
                                          log_cleaner_backoff_ms=20)
                    writers.append((await nursery.start(run_store, context, config, store))[0])
                await nursery.start(producer.run)
                await nursery.start(consumer.run)
                await consumer.wait_for_stores(2)
                topic = producer.host("compacted", next_sequence=0)
                await topic.publish_many(versions())
                await topic.wait_acked(BATCHES - 1, stores=2)
                discards = producer.host(DISCARD_SUBJECT, next_sequence=0)
                await discards.publish(encode_discard(Discard("compacted", topic.uuid, 0, Compaction(20, 0, 20, 0.5))))

                def cleaned(writer) -> list[list[bytes]]:
                    return values(entry.content for entry in writer.log.read("compacted", topic.uuid, 0, 100, 1 << 20))

                expected = [[] for _ in range(16)] + [[b"v%d" % i] for i in range(16, BATCHES)]
                for writer in writers:
                    await wait_until(lambda writer=writer: cleaned(writer) == expected)
                got = await consumer.read("compacted", topic.uuid, 0, BATCHES)
                assert values(content for _, content in got) == expected
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
            consumer.close()


async def test_a_restarted_store_knows_what_it_may_clean_before_gateways_say_it_again(tmp_path):
    config = fast_config()
    compaction = Compaction(7, 3, 0, 0.25)
    with zmq_context() as context, trio.fail_after(30):
        producer = Producer(context, config)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                await nursery.start(producer.run)
                writer, stop = await start_store(nursery, context, config, tmp_path / "store")
                discards = producer.host(DISCARD_SUBJECT, next_sequence=0)
                await discards.publish(encode_discard(Discard("compacted", "A" * 32, 0, compaction)))
                await discards.wait_acked(0, stores=1)
                assert writer.compactions == {("compacted", "A" * 32): compaction}
                await stop()
                writer, _ = await start_store(nursery, context, config, tmp_path / "store")
                assert writer.compactions == {("compacted", "A" * 32): compaction}
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
