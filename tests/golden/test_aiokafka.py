"""aiokafka's requests, captured and decoded by our codec.

aiokafka runs on asyncio, so each test drives it with asyncio.run from a
plain test function (the suite's async tests run on trio).
"""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from . import expect
from .expect import FETCHED, FETCHED_TOPIC, SENT, Consumed, Produced

CLIENT_ID = "golden-aiokafka"


async def produce(server, topic, **config) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
        request_timeout_ms=expect.REQUEST_TIMEOUT_MS, linger_ms=20, **config,
    )
    await producer.start()
    try:
        sends = [
            await producer.send(topic, partition=0, key=r.key, value=r.value,
                                timestamp_ms=r.timestamp, headers=list(r.headers))
            for r in SENT
        ]
        if config.get("acks", 1) != 0:
            offsets = [(await asyncio.wait_for(sent, expect.WAIT_S)).offset for sent in sends]
            assert offsets == [0, 1, 2], expect.apis(server)
        await producer.flush()
    finally:
        await producer.stop()


@pytest.mark.parametrize("codec", expect.CODECS)
def test_idempotent_produce(codec):
    topic = f"golden-ak-{codec}"
    with expect.captured_server() as server:
        asyncio.run(produce(server, topic, enable_idempotence=True,
                            compression_type=None if codec == "none" else codec))
    # aiokafka asks ApiVersions v0, which names no client software.
    expect.assert_idempotent_produce(server, CLIENT_ID, None, Produced(
        topic, acks=-1, timeout_ms=expect.REQUEST_TIMEOUT_MS, codec=codec))


@pytest.mark.parametrize("acks", [0, 1])
def test_produce_acks(acks):
    with expect.captured_server() as server:
        asyncio.run(produce(server, "golden-ak-acks", acks=acks))
    expect.assert_plain_produce(server, CLIENT_ID, Produced(
        "golden-ak-acks", acks=acks, timeout_ms=expect.REQUEST_TIMEOUT_MS))


async def init_transactions(server) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
                                transactional_id="golden-ak-txn", transaction_timeout_ms=7000)
    await producer.start()  # a transactional producer initialises on start
    await producer.stop()


def test_transactional_init():
    with expect.captured_server() as server:
        asyncio.run(init_transactions(server))
    expect.assert_clean(server, CLIENT_ID)
    expect.assert_init_producer_id(server, "golden-ak-txn", 7000)


async def consume_and_commit(server) -> list[tuple]:
    consumer = AIOKafkaConsumer(
        FETCHED_TOPIC, bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
        group_id="golden-ak-group", rebalance_timeout_ms=expect.REBALANCE_TIMEOUT_MS,
        request_timeout_ms=expect.REQUEST_TIMEOUT_MS, **expect.PYTHON_CONSUMER_CONFIG,
    )
    await consumer.start()
    try:
        messages = [await asyncio.wait_for(consumer.getone(), expect.WAIT_S) for _ in FETCHED]
        await consumer.commit()
        await asyncio.to_thread(expect.wait_for, server, "Heartbeat")
    finally:
        await consumer.stop()
    return [(m.offset, m.timestamp, m.key, m.value, tuple(m.headers)) for m in messages]


def test_consumer_group():
    with expect.captured_server() as server:
        records = asyncio.run(consume_and_commit(server))
    expect.assert_consumer_run(server, CLIENT_ID, None, records, Consumed(
        "golden-ak-group", isolation_level=0, assignors=("roundrobin",)))
