"""Topic and broker compression.type: produced batches stored with the topic's codec.

One gateway serves the module, started with the broker's compression.type
gzip, so that topics without their own value inherit it; each test works on
topics of its own. Batches are recompressed on produce with offsets,
timestamps, headers and producer ids kept: every client reads them back, a
raw Fetch shows the stored codec, retries still deduplicate and
transactions still commit and abort.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Codec, Record, RecordBatch, build_batch, split_records
from tests.gateway.admin import create_topic
from tests.gateway.clients import (
    CLIENTS,
    TIMEOUT_S,
    Got,
    Sent,
    compression_config,
    confluent_consume,
    confluent_produce,
    kafka_python_produce,
)
from tests.gateway.server import GatewayProcess
from tests.gateway.test_validation import Connection, fetch, produce

INIT_PRODUCER_ID = by_name("InitProducerId")
BROKER_CODEC = "gzip"
TARGETS = ["uncompressed", "gzip", "snappy", "lz4", "zstd"]
# A producer codec other than the topic's, for each target.
OTHER = {"uncompressed": "zstd", "gzip": "lz4", "snappy": "zstd", "lz4": "snappy", "zstd": "gzip"}
FETCH_VERSION = 12  # zstd batches need Fetch v10 or later
KCAT = shutil.which("kcat")  # librdkafka as Debian builds it, where installed


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    server = GatewayProcess(tmp_path_factory.mktemp("gateway"), "--compression-type", BROKER_CODEC).start()
    yield server
    server.stop()


@pytest.fixture
def connection(gateway):
    opened = Connection(gateway.port)
    yield opened
    opened.close()


def codec_of(name: str) -> Codec:
    return Codec.NONE if name == "uncompressed" else Codec[name.upper()]


def stored_codecs(connection: Connection, topic: str) -> list[Codec]:
    """The codec of every batch partition 0 holds, as a raw Fetch returns them."""
    answer = fetch(connection, topic, FETCH_VERSION)
    assert answer.error_code == ErrorCode.NONE
    return [entry.compression for entry in split_records(answer.records).entries]


def records(prefix: str, count: int) -> list[Sent]:
    return [Sent(f"{prefix}-value-{i}".encode() * (1 + i % 5), key=f"{prefix}-key-{i}".encode(),
                 headers=(("h", f"{prefix}-{i}".encode()), ("empty", b"")), timestamp_ms=1_700_000_000_000 + i)
            for i in range(count)]


def as_got(sent: list[Sent]) -> list[tuple]:
    return [(s.key, s.value, s.headers, s.timestamp_ms) for s in sent]


def seen(got: list[Got]) -> list[tuple]:
    return [(g.key, g.value, tuple((k, bytes(v)) for k, v in g.headers), g.timestamp_ms) for g in got]


@pytest.mark.parametrize("target", TARGETS)
def test_every_client_reads_batches_recompressed_to_the_topic_codec(gateway, connection, target):
    topic = f"codec-{target}"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": target})
    from_other = records("other", 30)
    confluent_produce(gateway.bootstrap, topic, from_other, **compression_config("confluent-kafka", OTHER[target]))
    plain = records("plain", 20)  # kafka-python sends uncompressed, or gzip to an uncompressed topic
    kafka_python_produce(gateway.bootstrap, topic, plain, acks="all",
                         **compression_config("kafka-python", "gzip" if target == "uncompressed" else "none"))
    codecs = stored_codecs(connection, topic)
    assert codecs and set(codecs) == {codec_of(target)}
    sent = from_other + plain
    for client, (_, consume) in CLIENTS.items():
        got = consume(gateway.bootstrap, topic, [0], len(sent))
        assert [g.offset for g in got] == list(range(len(sent))), client
        assert seen(got) == as_got(sent), client
    if KCAT is not None:
        read = subprocess.run([KCAT, "-b", gateway.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                               "-f", "%k=%s@%o/%T\n"], capture_output=True, timeout=60, check=True).stdout
        assert read.decode().splitlines() == [f"{s.key.decode()}={s.value.decode()}@{n}/{s.timestamp_ms}"
                                              for n, s in enumerate(sent)]


def test_a_batch_already_in_the_topic_codec_is_stored_as_it_came(gateway, connection):
    topic = "codec-same"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": "lz4"})
    batch = build_batch([Record(i, 1000 + i, b"k", b"v%d" % i) for i in range(5)], codec=Codec.LZ4)
    assert produce(connection, topic, {0: batch}) == {0: (ErrorCode.NONE, 0)}
    stored = fetch(connection, topic, FETCH_VERSION).records
    assert bytes(stored)[61:] == batch[61:]  # the same compressed records, not compressed again


def test_topics_without_their_own_inherit_the_broker_codec(gateway, connection):
    topic = "codec-inherited"
    create_topic(gateway.bootstrap, topic)
    kafka_python_produce(gateway.bootstrap, topic, records("x", 5), acks="all")  # answered once fetchable
    assert set(stored_codecs(connection, topic)) == {Codec.GZIP}
    create_topic(gateway.bootstrap, "codec-producer", configs={"compression.type": "producer"})
    snappy = build_batch([Record(i, 1000 + i, b"k", b"v%d" % i) for i in range(5)], codec=Codec.SNAPPY)
    assert produce(connection, "codec-producer", {0: snappy}) == {0: (ErrorCode.NONE, 0)}
    assert stored_codecs(connection, "codec-producer") == [Codec.SNAPPY]


def test_zstd_topic_takes_produce_below_v7(gateway, connection):
    """Kafka refuses zstd batches below Produce v7, not other batches to a zstd topic."""
    topic = "codec-old-produce"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": "zstd"})
    Data = by_name("Produce").Request.TopicData
    batch = build_batch([Record(0, 1000, b"k", b"v")], codec=Codec.GZIP)
    response = connection.call(by_name("Produce"), 3, by_name("Produce").Request(
        acks=-1, timeout_ms=int(TIMEOUT_S * 1000),
        topic_data=[Data(name=topic, partition_data=[Data.PartitionData(index=0, records=batch)])]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert stored_codecs(connection, topic) == [Codec.ZSTD]


def test_fetch_below_v10_of_a_zstd_topic_is_refused(gateway, connection):
    """As Kafka: whatever the stored batches, a zstd topic is read with Fetch v10 or later."""
    create_topic(gateway.bootstrap, "codec-old-fetch", configs={"compression.type": "zstd"})
    assert produce(connection, "codec-old-fetch", {0: build_batch([Record(0, 1000, b"k", b"v")])}) == {
        0: (ErrorCode.NONE, 0)}
    assert {version: fetch(connection, "codec-old-fetch", version).error_code for version in (4, 9, 10)} == {
        4: ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, 9: ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, 10: ErrorCode.NONE}
    create_topic(gateway.bootstrap, "codec-old-fetch-gzip")
    assert fetch(connection, "codec-old-fetch-gzip", 4).error_code == ErrorCode.NONE


def test_idempotent_retries_still_deduplicate(gateway, connection):
    topic = "codec-idempotent"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": "zstd"})
    ids = connection.call(INIT_PRODUCER_ID, 1, INIT_PRODUCER_ID.Request(
        transactional_id=None, transaction_timeout_ms=-1))
    assert ids.error_code == ErrorCode.NONE
    first, second = ([Record(i, 1000 + i, b"k%d" % i, b"%s-%d" % (name, i)) for i in range(4)]
                     for name in (b"first", b"second"))
    batches = [build_batch(rs, codec=Codec.SNAPPY, producer_id=ids.producer_id, producer_epoch=ids.producer_epoch,
                           base_sequence=sequence) for rs, sequence in ((first, 0), (second, 4))]
    assert produce(connection, topic, {0: batches[0]}) == {0: (ErrorCode.NONE, 0)}
    assert produce(connection, topic, {0: batches[0]}) == {0: (ErrorCode.NONE, 0)}  # a retry
    assert produce(connection, topic, {0: batches[1]}) == {0: (ErrorCode.NONE, 4)}
    assert produce(connection, topic, {0: batches[1]}) == {0: (ErrorCode.NONE, 4)}
    stored = [RecordBatch(entry.buffer) for entry in split_records(fetch(connection, topic, FETCH_VERSION).records)
              .entries]
    assert [(b.compression, b.producer_id, b.base_sequence) for b in stored] == [
        (Codec.ZSTD, ids.producer_id, 0), (Codec.ZSTD, ids.producer_id, 4)]
    got = confluent_consume(gateway.bootstrap, topic, [0], 8)
    assert [(g.offset, g.value) for g in got] == [(r.offset + n, r.value) for n, rs in ((0, first), (4, second))
                                                  for r in rs]


def test_transactions_commit_and_abort_in_a_recompressed_topic(gateway, connection):
    from confluent_kafka import Producer

    topic = "codec-transactions"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": "zstd"})
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "transactional.id": "codec-txn",
                         "compression.type": "lz4"})
    producer.init_transactions(TIMEOUT_S)
    outcomes = [True, False, True]
    for number, commit in enumerate(outcomes):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, key=b"%d" % i, value=f"{number}-{i}".encode(), headers=[("n", b"%d" % number)])
        producer.flush(TIMEOUT_S)
        (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT_S)
    committed = confluent_consume(gateway.bootstrap, topic, [0], 20, **{"isolation.level": "read_committed"})
    assert [g.value for g in committed] == [f"{n}-{i}".encode() for n in (0, 2) for i in range(10)]
    assert all(g.headers == (("n", g.value[:1]),) for g in committed)
    stored = [RecordBatch(entry.buffer) for entry in split_records(fetch(connection, topic, FETCH_VERSION).records)
              .entries]
    data = [b for b in stored if not b.is_control]
    assert data and all(b.compression == Codec.ZSTD and b.is_transactional for b in data)
    assert sum(b.is_control for b in stored) == len(outcomes)


def test_compression_configs_described_with_their_source_and_altered(gateway):
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    topic = "codec-configs"
    create_topic(gateway.bootstrap, topic, configs={"compression.type": "zstd", "compression.zstd.level": "-5"})
    resource = ConfigResource("topic", topic)

    def described():
        return admin.describe_configs([resource])[resource].result(TIMEOUT_S)

    configs = described()
    assert (configs["compression.type"].value, configs["compression.type"].source) == (
        "zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (configs["compression.zstd.level"].value, configs["compression.zstd.level"].source) == (
        "-5", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert configs["compression.gzip.level"].value == "-1"
    assert configs["compression.lz4.level"].value == "9"
    admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("compression.lz4.level", "17", incremental_operation=AlterConfigOpType.SET)])])[
        resource].result(TIMEOUT_S)
    configs = described()
    assert (configs["compression.type"].value, configs["compression.type"].source) == (
        BROKER_CODEC, ConfigSource.STATIC_BROKER_CONFIG.value)
    assert configs["compression.lz4.level"].value == "17"
    for name, value in (("compression.type", "brotli"), ("compression.gzip.level", "0"),
                        ("compression.lz4.level", "18"), ("compression.zstd.level", "23")):
        future = admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])])[resource]
        with pytest.raises(Exception, match="INVALID_CONFIG|nvalid"):
            future.result(TIMEOUT_S)
