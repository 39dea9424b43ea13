"""Compacted topics with real clients: keyed records cleaned to the newest of each key."""

import struct
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, Record, RecordBatch, build_batch, read_batch_marker
from protocol.records.split import split_records
from tests.gateway.admin import create_topic
from tests.gateway.clients import CLIENTS, Sent, confluent_consume, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.server import GatewayProcess
from tests.gateway.test_produce_errors import produce, wire_record_errors

CLEANS_QUICKLY = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}
KEYS = 5
VERSIONS = 6
FETCH = by_name("Fetch")


@pytest.fixture(scope="module")
def cleaning_gateway(tmp_path_factory):
    server = GatewayProcess(tmp_path_factory.mktemp("compaction"), "--log-cleaner-backoff-ms", "100").start()
    yield server
    server.stop()


def versions() -> list[Sent]:
    """VERSIONS values of each key, interleaved; the last key's last version a tombstone."""
    sent = [Sent(key=b"k%d" % k, value=b"v%d-%d" % (k, v)) for v in range(VERSIONS) for k in range(KEYS)]
    sent[-1] = Sent(key=sent[-1].key, value=None)
    return sent


def newest(sent: list[Sent], offsets: list[int]) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of the newest record of each key, in offset order."""
    latest = {record.key: (offset, record.key, record.value) for record, offset in zip(sent, offsets, strict=True)}
    return sorted(latest.values())


def everything(bootstrap: str, topic: str, last_offset: int) -> list[tuple[int, bytes, bytes | None]]:
    """Every record from the start to `last_offset` (and maybe a few after), read with
    librdkafka, aborted ones too."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted"})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 30
        while not got or got[-1][0] < last_offset:
            assert time.monotonic() < deadline, "the log ends before the last offset produced"
            messages = consumer.consume(num_messages=1000, timeout=0.2)  # returns at the timeout if fewer
            got += [(m.offset(), m.key(), m.value()) for m in messages if m.error() is None]
        return got
    finally:
        consumer.close()


def wait_cleaned(bootstrap: str, topic: str, expected: list[tuple[int, bytes, bytes | None]],
                 also=lambda: True) -> None:
    """Until the records up to the last expected offset are `expected` and `also()` holds.
    Each check appends a record of another key: as in Kafka, the active segment (never
    cleaned) rolls only at an append after segment.ms, so the records before become cleanable."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    last = expected[-1][0]

    def cleaned() -> bool:
        producer.produce(topic, key=b"~roll", value=b"", partition=0)
        assert producer.flush(30) == 0
        return [record for record in everything(bootstrap, topic, last) if record[0] <= last] == expected and also()

    wait_until(cleaned, 60, f"the stores cleaned {topic}")


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_consumers_read_the_newest_value_of_each_key_with_gaps(cleaning_gateway, client):
    produce, consume = CLIENTS[client]
    topic = f"compacted-{client}"
    create_topic(cleaning_gateway.bootstrap, topic, configs=CLEANS_QUICKLY)
    sent = versions()
    offsets = []
    for start in range(0, len(sent), KEYS):  # several batches, so that whole batches go too
        offsets += produce(cleaning_gateway.bootstrap, topic, sent[start:start + KEYS])
    expected = newest(sent, offsets)
    wait_cleaned(cleaning_gateway.bootstrap, topic, expected)
    got = [g for g in consume(cleaning_gateway.bootstrap, topic, [0], len(expected)) if g.offset <= offsets[-1]]
    assert [(g.offset, g.key, g.value) for g in got] == expected
    assert [g.offset for g in got] != list(range(len(got)))  # gaps where older versions were


def test_a_burst_past_segment_bytes_is_cleaned_with_nothing_produced_after_it(cleaning_gateway):
    """Kafka rolls a segment at the append that would take it past segment.bytes, so a burst of
    batches, with nothing after it, leaves all but its last segment cleanable (librdkafka's 0077
    test). The gateway rolled only at a batch produced after a check that saw the size reached."""
    topic = "compacted-burst"
    create_topic(cleaning_gateway.bootstrap, topic, configs={"cleanup.policy": "compact", "segment.bytes": "1048576",
                                                             "min.cleanable.dirty.ratio": "0.01"})
    sent = [Sent(key=b"k%d" % (i % 2), value=b"%d" % i + b"x" * 200_000) for i in range(20)]
    # a batch each, all at once (segments of five batches), between two of the gateway's checks
    offsets = confluent_produce(cleaning_gateway.bootstrap, topic, sent, **{"batch.num.messages": 1})
    expected = newest(sent, offsets)  # both in the last segment: the segments before go whole

    def cleaned() -> bool:
        got = everything(cleaning_gateway.bootstrap, topic, offsets[-1])
        return got[-2:] == expected and len(got) < len(sent) // 2

    wait_until(cleaned, 30, f"the stores cleaned {topic}")


def test_tombstones_go_after_delete_retention_ms(cleaning_gateway):
    create_topic(cleaning_gateway.bootstrap, "compacted-tombstones",
                 configs={**CLEANS_QUICKLY, "delete.retention.ms": "300"})
    sent = versions()
    offsets = confluent_produce(cleaning_gateway.bootstrap, "compacted-tombstones", sent)
    live = [record for record in newest(sent, offsets) if record[2] is not None]
    wait_cleaned(cleaning_gateway.bootstrap, "compacted-tombstones", live)
    tombstone = newest(sent, offsets)[-1]
    assert tombstone[2] is None and tombstone not in everything(cleaning_gateway.bootstrap, "compacted-tombstones",
                                                                tombstone[0])


def test_keyless_records_are_refused(cleaning_gateway):
    create_topic(cleaning_gateway.bootstrap, "compacted-keyless", configs=CLEANS_QUICKLY)
    assert keyless_refused(cleaning_gateway.bootstrap, "compacted-keyless")


def test_keyed_records_with_headers_are_written(cleaning_gateway):
    """The keys of an uncompressed batch are checked record by record, headers and all (each
    header's key was read as text from a view of the request, which failed the request and
    closed the connection: librdkafka's 0077 test)."""
    create_topic(cleaning_gateway.bootstrap, "compacted-headers", configs=CLEANS_QUICKLY)
    producer = Producer({"bootstrap.servers": cleaning_gateway.bootstrap, "compression.type": "none"})
    errors = []
    for i in range(3):
        producer.produce("compacted-headers", key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x"), ("n", None)],
                         on_delivery=lambda error, message: errors.append(error))
    assert producer.flush(30) == 0
    assert errors == [None] * 3
    got = everything(cleaning_gateway.bootstrap, "compacted-headers", 2)
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(3)]


def produce_mixed(bootstrap: str, topic: str, **config) -> dict[bytes, int]:
    """{value: delivery error code} of ten records produced with librdkafka, every fifth keyless.
    Batches go when full (batch.num.messages) or at the flush, which skips linger.ms: never
    lingered out under load. The partition is known first, so that the records are batched
    from the start (unknown, they once went out in two batches under load)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60_000, **config})
    producer.list_topics(topic, timeout=10)
    errors = {}
    for i in range(10):
        producer.produce(topic, key=None if i % 5 == 0 else b"k%d" % i, value=b"v%d" % i,
                         on_delivery=lambda error, message: errors.update({message.value(): error.code()}))
    assert producer.flush(30) == 0
    return errors


def test_only_the_keyless_records_of_a_batch_are_invalid(cleaning_gateway):
    """Kafka names each keyless record of a refused batch; clients fail its keyed ones as
    refused for another record's sake."""
    create_topic(cleaning_gateway.bootstrap, "compacted-mixed", configs=CLEANS_QUICKLY)
    errors = produce_mixed(cleaning_gateway.bootstrap, "compacted-mixed")
    assert errors == {b"v%d" % i: KafkaError.INVALID_RECORD if i % 5 == 0 else KafkaError._INVALID_DIFFERENT_RECORD
                      for i in range(10)}


def test_librdkafka_fails_every_record_of_a_batch_with_one_keyless_record_as_invalid(cleaning_gateway):
    """Two batches of five, each refused naming its one keyless record, as Kafka would. librdkafka
    (2.4 to at least 2.16) then fails every record of both as INVALID_RECORD: rd_kafka_dr_msgq0
    (rdkafka_broker.c) sets the partition's error on each message of the batch unless the
    response names more than one record, overwriting the _INVALID_DIFFERENT_RECORD that
    rd_kafka_msgbatch_handle_Produce_result_record_errors (rdkafka_request.c) gave the keyed ones.
    (Kafka's Java client fails only the named record so: its others get a KafkaException.)"""
    create_topic(cleaning_gateway.bootstrap, "compacted-halves", configs=CLEANS_QUICKLY)
    errors = produce_mixed(cleaning_gateway.bootstrap, "compacted-halves", **{"batch.num.messages": 5})
    assert errors == {b"v%d" % i: KafkaError.INVALID_RECORD for i in range(10)}


@pytest.mark.parametrize("version", [8, 9, 12])
def test_the_refusal_of_keyless_records_on_the_wire_is_kafkas(cleaning_gateway, version):
    """A batch after others (sent based at offset 0, as Kafka requires of clients): Kafka names
    each keyless record by its index in the batch, answers base offset and append time -1, the
    log start offset, and the partition's message in its words."""
    topic = f"compacted-wire-v{version}"
    create_topic(cleaning_gateway.bootstrap, topic, configs=CLEANS_QUICKLY)
    confluent_produce(cleaning_gateway.bootstrap, topic, [Sent(key=b"k%d" % i, value=b"v") for i in range(3)])
    now = int(time.time() * 1000)
    batch = build_batch([Record(i, now, None if i in (2, 5) else b"k", b"v") for i in range(6)])
    answers, frame = produce(cleaning_gateway, version, {(topic, 0): batch}, acks=-1)
    answer = answers[topic, 0]
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    message = ("One or more records have been rejected due to 2 record errors in total, and only showing the "
               f"first three errors at most: [RecordError(batchIndex=2, message='{why}'), "
               f"RecordError(batchIndex=5, message='{why}')]")
    assert (answer.error_code, answer.base_offset, answer.log_append_time_ms, answer.log_start_offset) == (
        ErrorCode.INVALID_RECORD, -1, -1, 0)
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [(2, why), (5, why)]
    assert answer.error_message == message
    assert struct.pack(">hqqq", 87, -1, -1, 0) + wire_record_errors(version, [(2, why), (5, why)], message) in frame


def transaction(producer: Producer, topic: str, records: list[tuple[bytes, bytes]], *,
                commit: bool) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of the transaction's records, once it ended."""
    delivered = []
    producer.begin_transaction()
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0,
                         on_delivery=lambda _, message: delivered.append((message.offset(), message.key(),
                                                                          message.value())))
    producer.flush(30)
    (producer.commit_transaction if commit else producer.abort_transaction)(30)
    return sorted(delivered)


def test_aborted_transactions_are_cleaned_away(cleaning_gateway):
    topic = "compacted-transactions"  # markers go at once too, their records gone
    create_topic(cleaning_gateway.bootstrap, topic, configs={**CLEANS_QUICKLY, "delete.retention.ms": "0"})
    producer = Producer({"bootstrap.servers": cleaning_gateway.bootstrap, "transactional.id": "compaction-txn"})
    producer.init_transactions(30)
    transaction(producer, topic, [(b"a", b"a1"), (b"b", b"b1")], commit=True)
    transaction(producer, topic, [(b"a", b"aborted"), (b"c", b"aborted")], commit=False)
    transaction(producer, topic, [(b"b", b"b2")], commit=True)
    # offsets: a1 0, b1 1, marker 2, the aborted 3 and 4, marker 5, b2 6, marker 7
    # read_uncommitted sees aborted records until the cleaner removes them; an aborted
    # record supersedes nothing, so a1 stays
    wait_cleaned(cleaning_gateway.bootstrap, topic, [(0, b"a", b"a1"), (6, b"b", b"b2")])
    got = confluent_consume(cleaning_gateway.bootstrap, topic, [0], 2, **{"isolation.level": "read_committed"})
    assert [(g.offset, g.value) for g in got[:2]] == [(0, b"a1"), (6, b"b2")]


def raw_read_committed(server: GatewayProcess, topic: str, end: int) -> tuple[list, list[RecordBatch]]:
    """The aborted transactions and the batches, markers too, that read_committed Fetches
    from offset 0 to `end` return (clients never show markers)."""
    aborted, batches = [], []
    connection = RawConnection(server.port)
    try:
        while not batches or batches[-1].last_offset < end:
            partition = FETCH.Request.Topics.Partitions(
                partition=0, fetch_offset=batches[-1].last_offset + 1 if batches else 0,
                partition_max_bytes=1 << 20, log_start_offset=-1, current_leader_epoch=-1)
            body = FETCH.Request(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1,
                                 session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                                 topics=[FETCH.Request.Topics(topic=topic, partitions=[partition])])
            answer = connection.call(FETCH, 11, body).responses[0].partitions[0]
            aborted += answer.aborted_transactions
            batches += split_records(answer.records).entries
    finally:
        connection.sock.close()
    return aborted, batches


def test_aborted_transactions_and_their_markers_go_after_delete_retention_ms(cleaning_gateway):
    topic = "compacted-aborts"
    create_topic(cleaning_gateway.bootstrap, topic, configs={**CLEANS_QUICKLY, "delete.retention.ms": "500"})
    producer = Producer({"bootstrap.servers": cleaning_gateway.bootstrap, "transactional.id": "compaction-aborts"})
    producer.init_transactions(30)
    committed = []
    for n in range(3):  # committed and aborted transactions interleaved, over the same keys
        committed += transaction(producer, topic, [(b"c%d" % n, b"kept"), (b"d%d" % n, b"kept")], commit=True)
        transaction(producer, topic, [(b"c%d" % n, b"aborted"), (b"a%d" % n, b"aborted")], commit=False)
    committed += transaction(producer, topic, [(b"last", b"kept")], commit=True)

    def markers_gone() -> bool:  # the ABORT markers wait for their horizon, after the aborted records went
        aborted, batches = raw_read_committed(cleaning_gateway, topic, committed[-1][0])
        markers = [read_batch_marker(batch).type for batch in batches if batch.is_control]
        return not aborted and ControlType.ABORT not in markers and len(markers) == 4  # COMMITs stay

    wait_cleaned(cleaning_gateway.bootstrap, topic, committed, markers_gone)
    for isolation in ("read_uncommitted", "read_committed"):
        got = confluent_consume(cleaning_gateway.bootstrap, topic, [0], len(committed) + 1,
                                **{"isolation.level": isolation})
        assert [(g.offset, g.key, g.value) for g in got if g.offset <= committed[-1][0]] == committed


def keyless_refused(bootstrap: str, topic: str) -> bool:
    """Whether a produce without a key to `topic` is refused with INVALID_RECORD."""
    producer = Producer({"bootstrap.servers": bootstrap})
    errors = []
    producer.produce(topic, value=b"no key", on_delivery=lambda error, _: errors.append(error))
    assert producer.flush(30) == 0
    assert errors[0] is None or errors[0].code() == KafkaError.INVALID_RECORD
    return errors[0] is not None


def test_alter_configs_makes_a_topic_compacted_and_back(cleaning_gateway):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    create_topic(cleaning_gateway.bootstrap, "becomes-compacted")
    assert not keyless_refused(cleaning_gateway.bootstrap, "becomes-compacted")
    admin = KafkaAdminClient(bootstrap_servers=cleaning_gateway.bootstrap)
    try:
        for policy, refused in (("compact,delete", True), ("delete", False)):
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "becomes-compacted",
                                                configs={"cleanup.policy": policy})])
            assert keyless_refused(cleaning_gateway.bootstrap, "becomes-compacted") == refused
    finally:
        admin.close()


def test_the_broker_default_policy_applies_to_new_topics(tmp_path):
    server = GatewayProcess(tmp_path, "--log-cleanup-policy", "compact").start()
    try:
        assert keyless_refused(server.bootstrap, "compacted-by-default")  # auto-created
    finally:
        server.stop()
