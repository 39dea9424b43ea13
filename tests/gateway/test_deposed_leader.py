"""A gateway deposed by a fence of a newer leader epoch gets no write acknowledged.

The new leader is a second MeshStorage in the test, on the gateway's mesh: it claims the
partition at epoch 1 (the gateway stamps epoch 0 and never fenced), wins the one store,
and publishes after the store's head. The gateway learns it from the store's EPOCH-ACKs:
its acks=all produce then fails with NOT_LEADER_OR_FOLLOWER, what Kafka's deposed leader
answers (its purgatory completes a waiting produce with it once the partition's
leadership moved, and an append to a partition it no longer leads is refused with it),
so that clients refresh metadata and go to the new leader. The store never takes the
refused batch.
"""

from contextlib import closing

import pytest
import trio
from kafka import KafkaProducer
from kafka.errors import NotLeaderForPartitionError

from gateway.partitions.offset_index import OffsetIndex
from gateway.partitions.partition_log import epoch_end, epochs_in_offsets
from gateway.settings.table import MeshSettings
from gateway.storage.mesh_storage import MeshStorage
from gateway.zmq_trio import zmq_context
from protocol.kafka.apis import by_name
from protocol.records import RecordBatch
from protocol.records.builder import build_batch
from protocol.records.record import Record
from tests.gateway.admin import create_topic
from tests.gateway.clients import TIMEOUT_S, Sent, kafka_python_produce
from tests.gateway.test_validation import Connection

TOPIC = "fenced"
LEADER_EPOCH = by_name("OffsetForLeaderEpoch")


def mesh_settings(gateway) -> MeshSettings:
    return MeshSettings(beacon_sub_address=(f"tcp://127.0.0.1:{gateway.tower_sub}",),
                        beacon_pub_address=(f"tcp://127.0.0.1:{gateway.tower_pub}",),
                        beacon_interval_ms=200, head_interval_ms=200)


async def on_the_mesh(gateway, work):
    """Run `work(storage)` with a MeshStorage of our own on the gateway's mesh."""
    with (zmq_context() as context, trio.fail_after(TIMEOUT_S),
          closing(MeshStorage(context, mesh_settings(gateway))) as storage):
        async with trio.open_nursery() as nursery:
            await nursery.start(storage.run)
            await storage.wait_for_stores(1)
            result = await work(storage)
            nursery.cancel_scope.cancel()
    return result


async def take_over(storage: MeshStorage) -> str:
    """Fence the topic's one partition at epoch 1 and publish a batch of that epoch after the
    store's head, acknowledged; the partition's address."""
    [address] = await storage.heads(TOPIC)
    outcome = await storage.fence(TOPIC, address, 1, lambda answers: False)
    assert outcome.won(stores=1, min_insync=1) and outcome.start == 1
    partition = storage.host(TOPIC, address, outcome.start, epoch=1)
    await partition.publish(build_batch([Record(0, 1000, None, b"new leader")], partition_leader_epoch=1))
    await partition.wait_acked(1, 1)
    return address


async def stored_values(storage: MeshStorage, address: str) -> list[tuple[int, bytes]]:
    head = (await storage.heads(TOPIC))[address]
    return [(RecordBatch(memoryview(content)).partition_leader_epoch, record.value)
            async for _, content in storage.contents(TOPIC, address, head)
            for record in RecordBatch(memoryview(content)).records()]


def test_a_deposed_gateways_acks_all_produce_fails_and_is_never_stored(gateway):
    create_topic(gateway.bootstrap, TOPIC)
    assert kafka_python_produce(gateway.bootstrap, TOPIC, [Sent(b"before")], acks="all") == [0]
    address = trio.run(on_the_mesh, gateway, take_over)

    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks="all", retries=0)
    try:
        for attempt in range(2):  # the first may be published before the gateway learns, the second not
            with pytest.raises(NotLeaderForPartitionError):
                producer.send(TOPIC, b"deposed %d" % attempt).get(TIMEOUT_S)
    finally:
        producer.close(TIMEOUT_S)

    async def read(storage):
        return await stored_values(storage, address)

    assert trio.run(on_the_mesh, gateway, read) == [(0, b"before"), (1, b"new leader")]


def test_offset_for_leader_epoch_answers_from_the_epochs_known(gateway):
    create_topic(gateway.bootstrap, "epochs")
    assert kafka_python_produce(gateway.bootstrap, "epochs", [Sent(b"a"), Sent(b"b")], acks="all") == [0, 1]
    connection = Connection(gateway.port)
    try:
        Topic = LEADER_EPOCH.Request.Topics
        answers = {}
        for epoch in (0, 3, -1):
            response = connection.call(LEADER_EPOCH, 4, LEADER_EPOCH.Request(replica_id=-1, topics=[
                Topic(topic="epochs", partitions=[Topic.Partitions(partition=0, leader_epoch=epoch)])]))
            (partition,) = response.topics[0].partitions
            answers[epoch] = (partition.error_code, partition.leader_epoch, partition.end_offset)
    finally:
        connection.close()
    assert answers == {0: (0, 0, 2), 3: (0, -1, -1), -1: (0, -1, -1)}


def test_an_epoch_ends_where_the_next_starts():
    """Kafka's LeaderEpochFileCache.endOffsetFor over epochs 2 from offset 5 and 4 from 9."""
    epochs = [(2, 5), (4, 9)]
    assert epoch_end(epochs, 4, 12) == (4, 12)  # the latest ends at the log end
    assert epoch_end(epochs, 3, 12) == (2, 9)  # the largest at most 3 is 2; it ends where 4 starts
    assert epoch_end(epochs, 2, 12) == (2, 9)
    assert epoch_end(epochs, 1, 12) == (1, 5)  # older than any known: ends where the first starts
    assert epoch_end(epochs, 5, 12) == (-1, -1)  # newer than the leader's
    assert epoch_end(epochs, -1, 12) == (-1, -1)


def test_a_reopened_partitions_epochs_come_from_the_stores_in_offsets():
    """Batches at sequences 3..7 hold offsets 10..29 (4 each, 5 from 26); the stores knew
    epoch 1 from sequence 0, 2 from 5 and 4 from 7; the gateway now leads epoch 6."""
    offsets = OffsetIndex(3, 10)
    for sequence in range(3, 8):
        offsets.add(sequence, offsets.next_offset, 4 if sequence < 7 else 5, 1000, 100)
    assert epochs_in_offsets(offsets, [(1, 0), (2, 5), (4, 7)], 6) == [(1, 10), (2, 18), (4, 26), (6, 31)]
    assert epochs_in_offsets(offsets, [(1, 0), (2, 3), (6, 8)], 6) == [(2, 10), (6, 31)]  # 1's records are gone
    assert epochs_in_offsets(OffsetIndex(0, 0), [(0, 0)], 1) == [(1, 0)]  # nothing stored
