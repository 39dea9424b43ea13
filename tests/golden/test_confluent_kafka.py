"""confluent-kafka's (librdkafka's) requests, captured and decoded by our codec."""

import time

import confluent_kafka
import pytest
from confluent_kafka import Consumer, Producer

from . import expect
from .expect import FETCHED, FETCHED_TOPIC, SENT, Consumed, Produced

CLIENT_ID = "golden-confluent"
SOFTWARE = ("confluent-kafka-python",
            f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}")
TIMEOUT_S = 5


def client_config(server, **config) -> dict:
    # Short timeouts keep a broken exchange from stalling the suite; log_level 3
    # keeps librdkafka's notices about the server hanging up out of the output.
    return {"bootstrap.servers": server.bootstrap, "client.id": CLIENT_ID,
            "socket.timeout.ms": TIMEOUT_S * 1000, "log_level": 3, **config}


def produce(server, topic, **config) -> None:
    producer = Producer(client_config(server, **{
        "message.timeout.ms": TIMEOUT_S * 1000, "request.timeout.ms": expect.REQUEST_TIMEOUT_MS,
        "linger.ms": 20, **config}))
    reports = []

    def report(error, message) -> None:
        reports.append((error, message.offset()))

    try:
        for r in SENT:
            producer.produce(topic, partition=0, key=r.key, value=r.value, timestamp=r.timestamp,
                             headers=list(r.headers), on_delivery=report)
        assert producer.flush(TIMEOUT_S) == 0, expect.apis(server)
    finally:
        producer.close()
    # With acks=0 librdkafka reports no offsets (-1001, "invalid").
    assert [error for error, _ in reports] == [None] * len(SENT)
    if config.get("acks", "all") != 0:
        assert [offset for _, offset in reports] == [0, 1, 2]


@pytest.mark.parametrize("codec", expect.CODECS)
def test_idempotent_produce(codec):
    topic = f"golden-ck-{codec}"
    with expect.captured_server() as server:
        produce(server, topic, **{"enable.idempotence": True, "compression.type": codec})
    expect.assert_idempotent_produce(server, CLIENT_ID, SOFTWARE, Produced(
        topic, acks=-1, timeout_ms=expect.REQUEST_TIMEOUT_MS, codec=codec))


@pytest.mark.parametrize("acks", [0, 1])
def test_produce_acks(acks):
    with expect.captured_server() as server:
        produce(server, "golden-ck-acks", acks=acks)
    expect.assert_plain_produce(server, CLIENT_ID, Produced(
        "golden-ck-acks", acks=acks, timeout_ms=expect.REQUEST_TIMEOUT_MS))


def test_transactional_init():
    with expect.captured_server() as server:
        producer = Producer(client_config(server, **{
            "transactional.id": "golden-ck-txn", "transaction.timeout.ms": 7000}))
        try:
            producer.init_transactions(TIMEOUT_S)
        finally:
            producer.close()
    expect.assert_clean(server, CLIENT_ID)
    expect.assert_init_producer_id(server, "golden-ck-txn", 7000)


def consume_all(consumer) -> list[tuple]:
    records = []
    deadline = time.monotonic() + expect.WAIT_S
    while len(records) < len(FETCHED) and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert message.error() is None, message.error()
        records.append((message.offset(), message.timestamp()[1], message.key(), message.value(),
                        tuple(message.headers() or ())))
    return records


def test_consumer_group():
    with expect.captured_server() as server:
        consumer = Consumer(client_config(server, **{
            "group.id": "golden-ck-group", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": expect.SESSION_TIMEOUT_MS,
            "max.poll.interval.ms": expect.REBALANCE_TIMEOUT_MS,
            "heartbeat.interval.ms": expect.HEARTBEAT_INTERVAL_MS,
            "fetch.wait.max.ms": expect.FETCH_MAX_WAIT_MS,
            "fetch.min.bytes": expect.FETCH_MIN_BYTES,
            "max.partition.fetch.bytes": expect.PARTITION_MAX_BYTES,
        }))
        try:
            consumer.subscribe([FETCHED_TOPIC])
            records = consume_all(consumer)
            consumer.commit(asynchronous=False)
            expect.wait_for(server, "Heartbeat")
        finally:
            consumer.close()
    # librdkafka reads committed data only unless told otherwise.
    expect.assert_consumer_run(server, CLIENT_ID, SOFTWARE, records, Consumed(
        "golden-ck-group", isolation_level=1, assignors=("range", "roundrobin")))
