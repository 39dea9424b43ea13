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
    outcomes = [True, False, True, False]
    create_topic(shared_gateway.bootstrap, topic, partitions=2)
    PRODUCERS[producer](shared_gateway.bootstrap, topic, f"tid-{topic}", outcomes)
    consume, config = CONSUMERS[consumer]
    committed_count = RECORDS * outcomes.count(True)
    committed = consume(shared_gateway.bootstrap, topic, [0, 1], committed_count + 1,
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
