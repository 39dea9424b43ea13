"""kafka-python's requests, captured and decoded by our codec."""

import importlib.util

import kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer

from . import expect
from .expect import FETCHED, FETCHED_TOPIC, SENT, Consumed, Produced

CLIENT_ID = "golden-kafka-python"
SOFTWARE = ("kafka-python", kafka.__version__)
TIMEOUT_S = 5


def produce(server, topic, sent=SENT, **config) -> None:
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
                             request_timeout_ms=expect.REQUEST_TIMEOUT_MS, linger_ms=20, **config)
    try:
        futures = [
            producer.send(topic, partition=0, key=r.key, value=r.value, timestamp_ms=r.timestamp,
                          headers=list(r.headers) or None)
            for r in sent
        ]
        producer.flush(TIMEOUT_S)
        if config.get("acks", 1) != 0:
            assert [f.get(TIMEOUT_S).offset for f in futures] == [0, 1, 2]
    finally:
        producer.close(TIMEOUT_S)


@pytest.mark.parametrize("codec", expect.CODECS)
def test_idempotent_produce(codec):
    topic = f"golden-kp-{codec}"
    with expect.captured_server() as server:
        produce(server, topic, acks="all", enable_idempotence=True,
                compression_type=None if codec == "none" else codec)
    expect.assert_idempotent_produce(server, CLIENT_ID, SOFTWARE, Produced(
        topic, acks=-1, timeout_ms=expect.REQUEST_TIMEOUT_MS, codec=codec))


@pytest.mark.parametrize("acks", [0, 1])
def test_produce_acks(acks):
    with expect.captured_server() as server:
        produce(server, "golden-kp-acks", acks=acks, enable_idempotence=False)
    expect.assert_plain_produce(server, CLIENT_ID, Produced(
        "golden-kp-acks", acks=acks, timeout_ms=expect.REQUEST_TIMEOUT_MS))


LEGACY = [((0, 10), 1), ((0, 9), 0)]
LEGACY_CODECS = ["none", "gzip", "snappy", "lz4"]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("api_version, magic", LEGACY)
def test_legacy_message_sets(api_version, magic, codec):
    if (magic, codec) == (0, "lz4") and importlib.util.find_spec("xxhash") is None:
        pytest.skip("kafka-python writes magic 0 lz4 only with xxhash, not a project dependency")
    # Legacy messages carry no headers; magic 0 carries no timestamp either.
    sent = [r._replace(headers=()) for r in SENT]
    with expect.captured_server() as server:
        produce(server, "golden-kp-legacy", sent, api_version=api_version, acks=1,
                compression_type=None if codec == "none" else codec)
    expect.assert_clean(server, CLIENT_ID)
    # A pinned api_version skips the ApiVersions probe: Produce v2 is magic 1, v1 is magic 0.
    assert {c.version for c in server.requests("Produce")} == {magic + 1}
    expected = sent if magic else [r._replace(timestamp=-1) for r in sent]
    expect.assert_produce(server, Produced(
        "golden-kp-legacy", acks=1, timeout_ms=expect.REQUEST_TIMEOUT_MS, codec=codec,
    ), expected, magic=magic)


def test_transactional_init():
    with expect.captured_server() as server:
        producer = KafkaProducer(bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
                                 transactional_id="golden-kp-txn", transaction_timeout_ms=7000)
        try:
            producer.init_transactions()
        finally:
            producer.close(TIMEOUT_S)
    expect.assert_clean(server, CLIENT_ID)
    expect.assert_init_producer_id(server, "golden-kp-txn", 7000)


def test_consumer_group():
    with expect.captured_server() as server:
        consumer = KafkaConsumer(
            FETCHED_TOPIC, bootstrap_servers=server.bootstrap, client_id=CLIENT_ID,
            group_id="golden-kp-group", max_poll_interval_ms=expect.REBALANCE_TIMEOUT_MS,
            request_timeout_ms=expect.REQUEST_TIMEOUT_MS, **expect.PYTHON_CONSUMER_CONFIG,
        )
        try:
            records = []
            while len(records) < len(FETCHED):
                batches = consumer.poll(timeout_ms=TIMEOUT_S * 1000)
                assert batches, f"nothing consumed; got {expect.apis(server)}"
                records += [(m.offset, m.timestamp, m.key, m.value, tuple(m.headers))
                            for batch in batches.values() for m in batch]
            consumer.commit()
            expect.wait_for(server, "Heartbeat")
        finally:
            consumer.close()
    expect.assert_consumer_run(server, CLIENT_ID, SOFTWARE, records, Consumed(
        "golden-kp-group", isolation_level=0, assignors=("range", "roundrobin")))
