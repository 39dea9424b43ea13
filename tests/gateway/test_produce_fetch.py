"""Produce and fetch through the real gateway with the three Python clients."""

import itertools

import pytest

from tests.gateway.admin import create_topic
from tests.gateway.clients import CLIENTS, Sent, compression_config, confluent_consume, confluent_produce, same_records
from tests.gateway.conftest import STORE_PLACEMENTS
from tests.gateway.server import GatewayProcess

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
_topics = itertools.count()


def new_topic(prefix: str) -> str:
    return f"{prefix}-{next(_topics)}"


def varied_records(count: int, partitions: int = 1) -> list[Sent]:
    """Keys, null keys, null values, headers and explicit timestamps mixed."""
    base = 1_700_000_000_000
    return [
        Sent(
            value=None if i % 7 == 3 else f"value-{i}".encode() * (1 + i % 5),
            key=None if i % 3 == 0 and i % 7 != 3 else f"key-{i}".encode(),  # never both null
            headers=(("h", f"{i}".encode()), ("empty", b"")) if i % 4 == 1 else (),
            timestamp_ms=base + i,
            partition=i % partitions,
        )
        for i in range(count)
    ]


@STORE_PLACEMENTS
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_round_trip_every_codec(shared_gateway, client, codec):
    produce, consume = CLIENTS[client]
    topic = new_topic(f"codec-{client}-{codec}")
    create_topic(shared_gateway.bootstrap, topic, partitions=2)
    sent = varied_records(200, partitions=2)
    produce(shared_gateway.bootstrap, topic, sent, **compression_config(client, codec))
    got = consume(shared_gateway.bootstrap, topic, [0, 1], len(sent))
    assert same_records(sent, got)
    by_value = {(r.partition, r.key, r.value): r for r in got}
    for record in sent:
        assert by_value[(record.partition, record.key, record.value)].timestamp_ms == record.timestamp_ms


@STORE_PLACEMENTS
@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_round_trip_every_acks(shared_gateway, client, acks):
    produce, consume = CLIENTS[client]
    topic = new_topic(f"acks-{client}")
    sent = varied_records(100)
    config = {"acks": {"all": -1}.get(acks, acks) if client == "confluent-kafka" else acks}
    if acks != "all":  # idempotence needs acks=all
        config["enable.idempotence" if client == "confluent-kafka" else "enable_idempotence"] = False
    offsets = produce(shared_gateway.bootstrap, topic, sent, **config)
    if acks != 0:
        assert offsets == list(range(len(sent)))
    assert same_records(sent, consume(shared_gateway.bootstrap, topic, [0], len(sent)))


@STORE_PLACEMENTS
@pytest.mark.parametrize("client", list(CLIENTS))
def test_records_over_one_megabyte(shared_gateway, client):
    produce, consume = CLIENTS[client]
    topic = new_topic(f"large-{client}")
    big = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    config = {"message.max.bytes": 8 * 1024 * 1024} if client == "confluent-kafka" else {
        "max_request_size": 8 * 1024 * 1024}
    sent = [Sent(value=big[:1_500_000], key=b"a"), Sent(value=b"small"), Sent(value=big[:900_000])]
    create_topic(shared_gateway.bootstrap, topic, configs={"max.message.bytes": str(8 * 1024 * 1024)})
    produce(shared_gateway.bootstrap, topic, sent, **config)
    consume_config = {"fetch.max.bytes": 16 * 1024 * 1024} if client == "confluent-kafka" else {}
    assert same_records(sent, consume(shared_gateway.bootstrap, topic, [0], len(sent), **consume_config))


def test_many_partitions_share_the_memory_for_recent_batches(tmp_path):
    """With --tail-bytes-total, each partition keeps its share in memory; what falls out of
    it is read back from the stores, identical and in order."""
    server = GatewayProcess(tmp_path / "gateway", "--tail-bytes-total", "400000").start()
    try:
        create_topic(server.bootstrap, "shared-tail", partitions=8)
        assert "bytes_per_partition=50000" in server.log_path.read_text()
        sent = [Sent(f"{n:05}".encode() * 200, partition=n % 8) for n in range(800)]  # twice a share
        confluent_produce(server.bootstrap, "shared-tail", sent, **{"linger.ms": 0})
        got = confluent_consume(server.bootstrap, "shared-tail", list(range(8)), len(sent))
        for partition in range(8):
            assert [m.value for m in got if m.partition == partition] == [
                s.value for s in sent if s.partition == partition]
    finally:
        server.stop()
