"""Transactions (KIP-98) through real clients: commit, abort, read_committed, fencing."""

from __future__ import annotations

import asyncio

import pytest

from tests.gateway.admin import create_topic
from tests.gateway.clients import aiokafka_consume, confluent_consume

RECORDS = 20


def _confluent_transactions(bootstrap: str, topic: str, transactional_id: str, outcomes: list[bool]) -> None:
    """One transaction of RECORDS records per outcome (True: commit, False: abort)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    for number, commit in enumerate(outcomes):
        producer.begin_transaction()
        for i in range(RECORDS):
            producer.produce(topic, value=f"{number}-{i}-{'commit' if commit else 'abort'}".encode(), partition=i % 2)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)


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


PRODUCERS = {"confluent-kafka": _confluent_transactions, "aiokafka": _aiokafka_transactions}
CONSUMERS = {
    "confluent-kafka": (confluent_consume, lambda level: {"isolation.level": level}),
    "aiokafka": (aiokafka_consume, lambda level: {"isolation_level": level}),
}


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("consumer", CONSUMERS)
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


def test_zombie_is_fenced(shared_gateway):
    from confluent_kafka import KafkaException, Producer

    config = {"bootstrap.servers": shared_gateway.bootstrap, "transactional.id": "zombie"}
    first = Producer(config)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce("zombie-topic", b"from the zombie")
    first.flush(30)
    second = Producer(config)
    second.init_transactions(30)  # aborts the zombie's transaction, with its epoch bumped
    with pytest.raises(KafkaException) as raised:
        first.produce("zombie-topic", b"again")
        first.flush(10)
        first.commit_transaction(10)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    second.begin_transaction()
    second.produce("zombie-topic", b"from the new producer")
    second.commit_transaction(30)
    got = confluent_consume(shared_gateway.bootstrap, "zombie-topic", [0], 2, **{"isolation.level": "read_committed"})
    assert [m.value for m in got] == [b"from the new producer"]


ABANDON = """
import os, sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "abandoned",
                     "transaction.timeout.ms": 3000})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(5):
    producer.produce("abandoned", b"never committed", partition=0)
producer.flush(30)
os._exit(0)  # killed with its transaction open
"""


def _offsets(bootstrap: str, topic: str, level) -> tuple[int, int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {TopicPartition(topic, 0): OffsetSpec.latest()}
    futures = admin.list_offsets(wanted, isolation_level=IsolationLevel[level])
    return next(iter(futures.values())).result(30).offset


@pytest.mark.parametrize("restart", [False, True], ids=["running", "restarted"])
def test_abandoned_transaction_is_aborted_after_its_timeout(tmp_path, restart):
    """Also across a SIGKILL of the gateway: the coordinator's journal keeps the
    transaction, the partition rebuilds its open transaction from batch headers."""
    import subprocess
    import sys
    import time

    from tests.gateway.clients import Sent, confluent_produce
    from tests.gateway.server import GatewayProcess

    gateway = GatewayProcess(tmp_path / "gateway", "--transaction-abort-interval-ms", "300").start()
    try:
        subprocess.run([sys.executable, "-c", ABANDON, gateway.bootstrap], check=True, timeout=60)
        confluent_produce(gateway.bootstrap, "abandoned", [Sent(b"after")])
        assert _offsets(gateway.bootstrap, "abandoned", "READ_COMMITTED") == 0  # the open transaction holds the LSO
        assert _offsets(gateway.bootstrap, "abandoned", "READ_UNCOMMITTED") == 6
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
    import time

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
