"""Transactions (KIP-98) through real clients: commit, abort, read_committed, fencing."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.gateway.admin import create_topic
from tests.gateway.clients import aiokafka_consume, confluent_consume, kafka_python_consume

RECORDS = 20


def _confluent_transactions(bootstrap: str, topic: str, transactional_id: str, outcomes: list[bool]):
    """One transaction of RECORDS records per outcome (True: commit, False: abort); the producer, still open."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    for number, commit in enumerate(outcomes):
        producer.begin_transaction()
        for i in range(RECORDS):
            producer.produce(topic, value=f"{number}-{i}-{'commit' if commit else 'abort'}".encode(), partition=i % 2)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    return producer


def _aiokafka_transactions(bootstrap: str, topic: str, transactional_id: str, outcomes: list[bool]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
        await producer.start()
        try:
            for number, commit in enumerate(outcomes):
                await producer.begin_transaction()
                for i in range(RECORDS):
                    value = f"{number}-{i}-{'commit' if commit else 'abort'}".encode()
                    await producer.send_and_wait(topic, value=value, partition=i % 2)
                await (producer.commit_transaction() if commit else producer.abort_transaction())
        finally:
            await producer.stop()

    asyncio.run(run())


def _kafka_python_transactions(bootstrap: str, topic: str, transactional_id: str, outcomes: list[bool]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    try:
        producer.init_transactions()
        for number, commit in enumerate(outcomes):
            producer.begin_transaction()
            for i in range(RECORDS):
                producer.send(topic, value=f"{number}-{i}-{'commit' if commit else 'abort'}".encode(), partition=i % 2)
            producer.flush()
            (producer.commit_transaction if commit else producer.abort_transaction)()
    finally:
        producer.close(30)


PRODUCERS = {"confluent-kafka": _confluent_transactions, "aiokafka": _aiokafka_transactions,
             "kafka-python": _kafka_python_transactions}
CONSUMERS = {
    "confluent-kafka": (confluent_consume, lambda level: {"isolation.level": level}),
    "aiokafka": (aiokafka_consume, lambda level: {"isolation_level": level}),
    "kafka-python": (kafka_python_consume, lambda level: {"isolation_level": level}),
}
# Each client's producer with confluent-kafka's consumer, and each client's consumer with a producer of
# another client: every producer and every read_committed consumer, without the whole matrix.
PAIRS = [(producer, "confluent-kafka") for producer in PRODUCERS] + [
    ("confluent-kafka", "aiokafka"), ("aiokafka", "kafka-python"), ("kafka-python", "aiokafka")]


@pytest.mark.parametrize("producer, consumer", PAIRS)
def test_committed_visible_aborted_never(shared_gateway, producer, consumer):
    topic = f"txn-{producer}-{consumer}"
    outcomes = [False, True, False, True]  # a leaked abort would show before the last commit
    create_topic(shared_gateway.bootstrap, topic, partitions=2)
    PRODUCERS[producer](shared_gateway.bootstrap, topic, f"tid-{topic}", outcomes)
    consume, config = CONSUMERS[consumer]
    committed_count = RECORDS * outcomes.count(True)
    committed = consume(shared_gateway.bootstrap, topic, [0, 1], committed_count,
                        **config("read_committed"))
    values = sorted(m.value for m in committed)
    assert values == sorted(f"{n}-{i}-commit".encode() for n, c in enumerate(outcomes) if c for i in range(RECORDS))
    everything = consume(shared_gateway.bootstrap, topic, [0, 1], RECORDS * len(outcomes),
                         **config("read_uncommitted"))
    assert len(everything) == RECORDS * len(outcomes)  # data records only: no control batch surfaces


ZOMBIE, SUCCESSOR = b"from the zombie", b"from the new producer"


def _confluent_zombie(bootstrap: str, topic: str, transactional_id: str) -> None:
    """A producer with a transaction open is replaced: its next writes and its commit fail."""
    from confluent_kafka import KafkaException, Producer

    config = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id}
    first = Producer(config)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, ZOMBIE)
    first.flush(30)
    second = Producer(config)
    second.init_transactions(30)  # aborts the zombie's transaction, with its epoch bumped
    with pytest.raises(KafkaException) as raised:
        first.produce(topic, b"again")
        first.flush(10)
        first.commit_transaction(10)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    second.begin_transaction()
    second.produce(topic, SUCCESSOR)
    second.commit_transaction(30)


def _aiokafka_zombie(bootstrap: str, topic: str, transactional_id: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run():
        first = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
        second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
        await first.start()
        try:
            await first.begin_transaction()
            await first.send_and_wait(topic, ZOMBIE)
            await second.start()
            with pytest.raises(KafkaError) as raised:
                await first.send_and_wait(topic, b"again")
                await first.commit_transaction()
            assert "fenced" in repr(raised.value).lower() or "epoch" in repr(raised.value).lower()
            async with second.transaction():
                await second.send_and_wait(topic, SUCCESSOR)
        finally:
            await second.stop()
            await first.stop()

    asyncio.run(run())


def _kafka_python_zombie(bootstrap: str, topic: str, transactional_id: str) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(topic, ZOMBIE).get(30)
        second.init_transactions()
        with pytest.raises(KafkaError) as raised:
            first.send(topic, b"again").get(30)
            first.commit_transaction()
        assert "fenced" in repr(raised.value).lower() or "epoch" in repr(raised.value).lower()
        # kafka-python takes the refused epoch as one to bump (KIP-360): its InitProducerId,
        # refused too, would abort a transaction the successor had open meanwhile (as Kafka's
        # coordinator does), so the successor starts once the zombie knows it is fenced.
        deadline = time.monotonic() + 30
        while not first._transaction_manager.has_fatal_error() and time.monotonic() < deadline:
            time.sleep(0.05)
        second.begin_transaction()
        second.send(topic, SUCCESSOR)
        second.commit_transaction()
    finally:
        second.close(10)
        first.close(10)


ZOMBIES = {"confluent-kafka": _confluent_zombie, "aiokafka": _aiokafka_zombie, "kafka-python": _kafka_python_zombie}


@pytest.mark.parametrize("client", ZOMBIES)
def test_zombie_is_fenced(shared_gateway, client):
    topic = f"zombie-{client}"
    ZOMBIES[client](shared_gateway.bootstrap, topic, topic)
    got = confluent_consume(shared_gateway.bootstrap, topic, [0], 1, **{"isolation.level": "read_committed"})
    assert [m.value for m in got] == [SUCCESSOR]


# Each client opens a transaction of 5 records on "abandoned" (3 s timeout), then dies with it open.
ABANDON = {
    "confluent-kafka": """
import os, sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "abandoned",
                     "transaction.timeout.ms": 5000})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(5):
    producer.produce("abandoned", b"never committed", partition=0)
producer.flush(30)
os._exit(0)
""",
    "aiokafka": """
import asyncio, os, sys
from aiokafka import AIOKafkaProducer
async def abandon():
    producer = AIOKafkaProducer(bootstrap_servers=sys.argv[1], transactional_id="abandoned",
                                transaction_timeout_ms=5000)
    await producer.start()
    await producer.begin_transaction()
    for i in range(5):
        await producer.send_and_wait("abandoned", b"never committed", partition=0)
    os._exit(0)
asyncio.run(abandon())
""",
    "kafka-python": """
import os, sys
from kafka import KafkaProducer
producer = KafkaProducer(bootstrap_servers=sys.argv[1], transactional_id="abandoned", transaction_timeout_ms=5000)
producer.init_transactions()
producer.begin_transaction()
for i in range(5):
    producer.send("abandoned", b"never committed", partition=0)
producer.flush(30)
os._exit(0)
""",
}


def _offsets(bootstrap: str, topic: str, level) -> tuple[int, int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {TopicPartition(topic, 0): OffsetSpec.latest()}
    futures = admin.list_offsets(wanted, isolation_level=IsolationLevel[level])
    return next(iter(futures.values())).result(30).offset


@pytest.mark.parametrize("client, restart", [("confluent-kafka", False), ("confluent-kafka", True),
                                             ("aiokafka", False), ("kafka-python", False)],
                         ids=["confluent-kafka", "confluent-kafka-restarted", "aiokafka", "kafka-python"])
def test_abandoned_transaction_is_aborted_after_its_timeout(tmp_path, client, restart):
    """Also across a SIGKILL of the gateway: the coordinator's journal keeps the
    transaction, the partition rebuilds its open transaction from batch headers."""
    import subprocess
    import sys

    from tests.gateway.clients import Sent, confluent_produce
    from tests.gateway.server import GatewayProcess

    gateway = GatewayProcess(tmp_path / "gateway", "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "300").start()
    try:
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", ABANDON[client], gateway.bootstrap], check=True, timeout=60)
        confluent_produce(gateway.bootstrap, "abandoned", [Sent(b"after")])
        committed = _offsets(gateway.bootstrap, "abandoned", "READ_COMMITTED")
        uncommitted = _offsets(gateway.bootstrap, "abandoned", "READ_UNCOMMITTED")
        if time.monotonic() - began < 5:  # too soon for the transaction to have timed out
            assert (committed, uncommitted) == (0, 6)  # the open transaction holds the LSO
        if restart:
            gateway.kill()
            gateway.start()
            assert _offsets(gateway.bootstrap, "abandoned", "READ_COMMITTED") in (0, 7)
        deadline = time.monotonic() + 20
        while _offsets(gateway.bootstrap, "abandoned", "READ_COMMITTED") == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _offsets(gateway.bootstrap, "abandoned", "READ_COMMITTED") == 7  # past the ABORT marker
        got = confluent_consume(gateway.bootstrap, "abandoned", [0], 1, **{"isolation.level": "read_committed"})
        assert [m.value for m in got] == [b"after"]
        assert "transaction_timed_out" in gateway.log_path.read_text()
    finally:
        gateway.stop()


def test_consume_transform_produce_commits_offsets_with_the_transaction(shared_gateway):
    """send_offsets_to_transaction: the group's offsets move only with committed output."""

    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.gateway.clients import Sent, confluent_produce

    bootstrap, count = shared_gateway.bootstrap, 500
    confluent_produce(bootstrap, "ctp-in", [Sent(f"{i}".encode()) for i in range(count)])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ctp-loop"})
    producer.init_transactions(30)
    consumer.subscribe(["ctp-in"])
    processed, deadline, aborted_once = 0, time.monotonic() + 60, False
    try:
        while processed < count and time.monotonic() < deadline:
            messages = consumer.consume(100, timeout=1)
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.produce("ctp-out", m.value() + b"!")
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            if not aborted_once:  # the first batch is aborted, then read again from the committed offsets
                aborted_once = True
                producer.abort_transaction(30)
                consumer.seek(TopicPartition("ctp-in", 0, 0))
                continue
            producer.commit_transaction(30)
            processed += len(messages)
        committed = consumer.committed([TopicPartition("ctp-in", 0)], timeout=30)[0].offset
    finally:
        consumer.close()
    assert committed == count
    got = confluent_consume(bootstrap, "ctp-out", [0], count, **{"isolation.level": "read_committed"})
    assert sorted(m.value for m in got) == sorted(f"{i}!".encode() for i in range(count))


def test_kafka_python_sends_offsets_to_its_transaction(shared_gateway):
    """kafka-python's send_offsets_to_transaction with its consumer's group metadata (KIP-447):
    an aborted transaction leaves the group's offset where it was, a committed one moves it."""

    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from tests.gateway.clients import Sent, confluent_produce

    bootstrap, count = shared_gateway.bootstrap, 300
    source = TopicPartition("kp-ctp-in", 0)
    confluent_produce(bootstrap, source.topic, [Sent(f"{i}".encode()) for i in range(count)])
    consumer = KafkaConsumer(source.topic, bootstrap_servers=bootstrap, group_id="kp-ctp", enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-ctp-loop")
    producer.init_transactions()
    processed, deadline, aborted_once = 0, time.monotonic() + 60, False
    try:
        while processed < count and time.monotonic() < deadline:
            messages = consumer.poll(timeout_ms=1000, max_records=100).get(source, [])
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.send("kp-ctp-out", m.value + b"!", partition=0)
            producer.send_offsets_to_transaction({source: OffsetAndMetadata(messages[-1].offset + 1)},
                                                 consumer.group_metadata())
            if not aborted_once:  # the first batch is aborted, then read again from the committed offset
                aborted_once = True
                producer.abort_transaction()
                assert consumer.committed(source) is None
                consumer.seek(source, messages[0].offset)
                continue
            producer.commit_transaction()
            processed += len(messages)
        committed = consumer.committed(source)
    finally:
        producer.close(10)
        consumer.close()
    assert committed == count
    got = confluent_consume(bootstrap, "kp-ctp-out", [0], count, **{"isolation.level": "read_committed"})
    assert [m.value for m in got] == [f"{i}!".encode() for i in range(count)]


def test_aiokafka_sends_offsets_to_its_transaction(shared_gateway):
    """aiokafka's send_offsets_to_transaction: the transaction's end reaches the group's offsets
    (the marker into __consumer_offsets), an abort leaves them where they were, a commit moves them."""

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from tests.gateway.clients import Sent, confluent_produce

    bootstrap, count, group = shared_gateway.bootstrap, 50, "aio-ctp"
    source = TopicPartition("aio-ctp-in", 0)
    confluent_produce(bootstrap, source.topic, [Sent(f"{i}".encode()) for i in range(count)])

    async def transaction(producer, consumer, commit: bool) -> None:
        await consumer.seek_to_beginning(source)
        messages, deadline = [], time.monotonic() + 30
        while len(messages) < count and time.monotonic() < deadline:
            messages += (await consumer.getmany(source, timeout_ms=1000)).get(source, [])
        assert len(messages) == count
        async with producer.transaction():
            for m in messages:
                await producer.send_and_wait("aio-ctp-out", m.value + (b"!" if commit else b"?"), partition=0)
            await producer.send_offsets_to_transaction({source: messages[-1].offset + 1}, group)
            if not commit:
                raise Aborted

    async def run() -> tuple[int | None, int | None]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    isolation_level="read_committed")
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-ctp-loop")
        await consumer.start()
        await producer.start()
        try:
            consumer.assign([source])
            with pytest.raises(Aborted):
                await transaction(producer, consumer, commit=False)
            after_abort = await consumer.committed(source)
            await transaction(producer, consumer, commit=True)
            # the marker is written after EndTxn is answered, as Kafka's coordinator writes it
            deadline = time.monotonic() + 30
            while (after_commit := await consumer.committed(source)) != count and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return after_abort, after_commit
        finally:
            await producer.stop()
            await consumer.stop()

    after_abort, after_commit = asyncio.run(asyncio.wait_for(run(), 90))
    assert (after_abort, after_commit) == (None, count)
    got = aiokafka_consume(bootstrap, "aio-ctp-out", [0], count, isolation_level="read_committed")
    assert [m.value for m in got] == [f"{i}!".encode() for i in range(count)]


class Aborted(Exception):
    """Raised in a transaction's block to abort it."""
