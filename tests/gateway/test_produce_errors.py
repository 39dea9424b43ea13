"""Produce refusals on the wire as Kafka 4.0 answers them, field by field.

Raw Produce requests, v8 (the last before flexible versions) and v9 (flexible),
through the real gateway. Kafka answers a refused partition with base offset
and log append time -1; with its log start offset only where its log refused
the batch (ReplicaManager.appendToLocalLog), not for a refusal before it nor
one of the exceptions that method expects (too large, corrupt, unknown, not the
leader); and a null error message unless the refusal names records or comes
from the transaction's verification in Kafka's own words. A batch appended but
not stored in time keeps its base offset, as Kafka's DelayedProduce answers.
"""

from __future__ import annotations

import os
import signal
import struct
import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer
from kafka.errors import MessageSizeTooLargeError, NotEnoughReplicasError

from protocol.kafka import decode_response
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.kafka.primitives import write_uvarint
from protocol.records import Codec, Record, build_batch, build_message_set
from tests.gateway.admin import create_topic
from tests.gateway.clients import TIMEOUT_S, Sent, confluent_produce
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.server import children
from tests.protocol.records.bad_batches import records_bytes, sealed, transactional_without_producer

PRODUCE, INIT_PRODUCER_ID = by_name("Produce"), by_name("InitProducerId")
ADD_PARTITIONS = by_name("AddPartitionsToTxn")
VERSIONS = pytest.mark.parametrize("version", [8, 9])
LOG_START = 2  # each topic's records before it deleted, so that the log start offset is not 0
NO_MESSAGE = None


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(count: int = 1, *, first: int = 0, timestamp: int | None = None, **fields) -> bytes:
    stamp = now_ms() if timestamp is None else timestamp
    return build_batch([Record(first + i, stamp, b"k%d" % i, b"v") for i in range(count)], **fields)


def topic_with_log_start(server, name: str, **configs) -> str:
    """A one-partition topic whose log starts at LOG_START."""
    create_topic(server.bootstrap, name, configs={key.replace("_", "."): value for key, value in configs.items()})
    confluent_produce(server.bootstrap, name, [Sent(value=b"old%d" % n) for n in range(3)], acks=1)
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    (deleted,) = admin.delete_records([ConfluentPartition(name, 0, LOG_START)]).values()
    assert deleted.result(TIMEOUT_S).low_watermark == LOG_START
    return name


def produce(server, version: int, partitions: dict[tuple[str, int], bytes | None], *, acks: int = 1,
            transactional_id: str | None = None, timeout_ms: int = 10_000) -> tuple[dict, bytes]:
    """{(topic, partition): its answer} of one Produce, and the response's bytes."""
    Data = PRODUCE.Request.TopicData
    topics: dict[str, list] = {}
    for (name, index), records in partitions.items():
        topics.setdefault(name, []).append(Data.PartitionData(index=index, records=records))
    body = PRODUCE.Request(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                           topic_data=[Data(name=name, partition_data=data) for name, data in topics.items()])
    connection = RawConnection(server.port)
    try:
        connection.send(PRODUCE, version, body)
        frame = connection.receive_frame()
    finally:
        connection.close()
    response = decode_response(PRODUCE.key, version, frame)[1]
    return {(t.name, a.index): a for t in response.responses for a in t.partition_responses}, frame


def fields(answer) -> tuple:
    return (ErrorCode(answer.error_code), answer.base_offset, answer.log_append_time_ms, answer.log_start_offset,
            answer.error_message, [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors])


def wire_answer(version: int, index: int, code: ErrorCode, base_offset: int, log_start_offset: int,
                message: str | None = NO_MESSAGE, log_append_time: int = -1) -> bytes:
    """A partition's answer without record errors as Kafka's ProduceResponse lays it out for
    `version` (8 or flexible), up to its tagged fields (none)."""
    out = bytearray(struct.pack(">ihqqq", index, code, base_offset, log_append_time, log_start_offset))
    data = None if message is None else message.encode()
    if version >= 9:
        out.append(1)  # no record errors
        write_uvarint(out, 0 if data is None else len(data) + 1)
    else:
        out.extend(struct.pack(">ih", 0, -1 if data is None else len(data)))
    out.extend(data or b"")
    if version >= 9:
        out.append(0)
    return bytes(out)


def wire_record_errors(version: int, errors: list[tuple[int, str]], message: str) -> bytes:
    """The end of a refused partition's answer as Kafka's ProduceResponse schema lays it out:
    record_errors and error_message, compact from v9 with each element's and the partition's
    tagged fields (none) after."""
    out = bytearray()

    def string(text: str) -> None:
        data = text.encode()
        if version >= 9:
            write_uvarint(out, len(data) + 1)
        else:
            out.extend(struct.pack(">h", len(data)))
        out.extend(data)

    if version >= 9:
        write_uvarint(out, len(errors) + 1)
    else:
        out.extend(struct.pack(">i", len(errors)))
    for index, why in errors:
        out.extend(struct.pack(">i", index))
        string(why)
        if version >= 9:
            out.append(0)
    string(message)
    if version >= 9:
        out.append(0)
    return bytes(out)


def refused_as(server, version: int, topic: str, records: bytes | None, code: ErrorCode, log_start_offset: int,
               message: str | None = NO_MESSAGE, *, index: int = 0, **request) -> None:
    answers, frame = produce(server, version, {(topic, index): records}, **request)
    assert fields(answers[topic, index]) == (code, -1, -1, log_start_offset, message, [])
    assert wire_answer(version, index, code, -1, log_start_offset, message) in frame


@pytest.fixture(scope="module")
def refusing(shared_gateway):
    """A topic that needs two in-sync stores for acks=all (the gateway has one) and takes
    batches of up to 1000 bytes, whose log starts at LOG_START."""
    return topic_with_log_start(shared_gateway, "refusing", min_insync_replicas="2", max_message_bytes="1000")


# Refusals before the log: no log start offset -------------------------------------------------

@VERSIONS
def test_the_requests_own_checks_answer_without_the_log_start_offset(shared_gateway, refusing, version):
    """Kafka's ProduceRequest.validateRecords, before the partition's log and its min.insync check."""
    two_batches = batch() + batch()
    refused_as(shared_gateway, version, refusing, two_batches, ErrorCode.INVALID_RECORD, -1, acks=-1)
    legacy = build_message_set([Record(0, now_ms(), b"k", b"v")], magic=1)
    refused_as(shared_gateway, version, refusing, legacy, ErrorCode.INVALID_RECORD, -1)


@pytest.mark.parametrize("version", [3, 6])
def test_zstd_before_v7_is_refused_without_the_log_start_offset(shared_gateway, refusing, version):
    answers, _ = produce(shared_gateway, version, {(refusing, 0): batch(codec=Codec.ZSTD)})
    answer = answers[refusing, 0]
    assert (answer.error_code, answer.base_offset, answer.log_append_time_ms, answer.log_start_offset) == (
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1, -1, -1)


@VERSIONS
def test_unknown_partitions_and_internal_topics_answer_without_the_log_start_offset(shared_gateway, refusing,
                                                                                    version):
    refused_as(shared_gateway, version, refusing, batch(), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, index=7)
    refused_as(shared_gateway, version, "__consumer_offsets", batch(), ErrorCode.INVALID_TOPIC_EXCEPTION, -1)


def test_a_produce_never_creates_its_topic(shared_gateway):
    """Kafka creates a topic for the Metadata request that names it, not for a produce to it."""
    answers, _ = produce(shared_gateway, 9, {("never-created", 0): batch()})
    assert answers["never-created", 0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    listed = AdminClient({"bootstrap.servers": shared_gateway.bootstrap}).list_topics(timeout=TIMEOUT_S).topics
    assert "never-created" not in listed


@VERSIONS
def test_invalid_acks_come_after_the_partitions_own_refusals(shared_gateway, refusing, version):
    """Kafka answers INVALID_REQUIRED_ACKS from its ReplicaManager, for the partitions that got that far."""
    answers, frame = produce(shared_gateway, version, {(refusing, 0): batch(), (refusing, 7): batch(),
                                                       ("__consumer_offsets", 0): batch()}, acks=2)
    assert fields(answers[refusing, 0]) == (ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, -1, NO_MESSAGE, [])
    assert fields(answers["__consumer_offsets", 0]) == (ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, -1, NO_MESSAGE, [])
    assert fields(answers[refusing, 7]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, NO_MESSAGE, [])
    assert wire_answer(version, 0, ErrorCode.INVALID_REQUIRED_ACKS, -1, -1) in frame


@VERSIONS
def test_a_transactional_batch_without_a_transactional_id_refuses_the_request(shared_gateway, refusing, version):
    """Kafka's TRANSACTIONAL_ID_AUTHORIZATION_FAILED error response for every partition."""
    transactional = batch(producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)
    answers, frame = produce(shared_gateway, version, {(refusing, 0): batch(), (refusing, 7): transactional})
    for index in (0, 7):
        assert fields(answers[refusing, index]) == (
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1, -1, NO_MESSAGE, [])
        assert wire_answer(version, index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1) in frame


# Refusals of the log ---------------------------------------------------------------------------

@VERSIONS
def test_too_few_in_sync_stores_answer_with_the_log_start_offset(shared_gateway, refusing, version):
    """Kafka's Partition.appendRecordsToLeader refuses acks=all under min.insync.replicas
    (NotEnoughReplicasException, not one appendToLocalLog expects), before the log's checks."""
    refused_as(shared_gateway, version, refusing, batch(first=5), ErrorCode.NOT_ENOUGH_REPLICAS, LOG_START, acks=-1)


@VERSIONS
def test_what_the_log_refuses_without_naming_records_has_the_log_start_offset(shared_gateway, refusing, version):
    refused_as(shared_gateway, version, refusing, batch(first=5), ErrorCode.INVALID_RECORD, LOG_START)
    control = batch(control=True, producer_id=1, producer_epoch=0, base_sequence=0)
    refused_as(shared_gateway, version, refusing, control, ErrorCode.INVALID_RECORD, LOG_START)


@VERSIONS
def test_too_large_and_corrupt_batches_answer_without_the_log_start_offset(shared_gateway, refusing, version):
    """RecordTooLargeException and CorruptRecordException: appendToLocalLog's expected exceptions."""
    large = build_batch([Record(0, now_ms(), b"k", bytes(1200))])
    refused_as(shared_gateway, version, refusing, large, ErrorCode.MESSAGE_TOO_LARGE, -1)
    corrupt = bytearray(batch())
    corrupt[-1] ^= 1
    refused_as(shared_gateway, version, refusing, bytes(corrupt), ErrorCode.CORRUPT_MESSAGE, -1)


@VERSIONS
def test_records_out_of_bounds_are_named_with_the_log_start_offset_and_the_message(shared_gateway, refusing,
                                                                                   version):
    """RecordValidationException: Kafka's only refusal of the log with a message."""
    late = now_ms() + 2 * 3_600_000
    answers, frame = produce(shared_gateway, version, {(refusing, 0): batch(2, timestamp=late)})
    message = "One or more records have been rejected due to invalid timestamp"
    (code, base, append_time, log_start, got_message, errors) = fields(answers[refusing, 0])
    assert (code, base, append_time, log_start, got_message) == (ErrorCode.INVALID_TIMESTAMP, -1, -1, LOG_START,
                                                                 message)
    assert [index for index, _ in errors] == [0, 1]
    assert struct.pack(">hqqq", ErrorCode.INVALID_TIMESTAMP, -1, -1, LOG_START) + wire_record_errors(
        version, errors, message) in frame


@VERSIONS
@pytest.mark.parametrize("make", [
    lambda: sealed(records_bytes([b"first", b"second"])[:-3], 2),  # the last record cut short
    lambda: sealed(records_bytes([b"a", b"b"]) + b"\x07", 2),  # bytes after the last record
    lambda: sealed(records_bytes([b"a", b"b", b"c"]), 2),  # more records than counted
    lambda: sealed(bytes([records_bytes([b"v"])[0] + 2]) + records_bytes([b"v"])[1:] + b"\x00", 1),  # a stray byte
], ids=["truncated", "trailing", "count", "fields"])
def test_records_that_do_not_make_up_the_batch_are_invalid_with_the_log_start_offset(shared_gateway, refusing,
                                                                                     version, make):
    """Kafka's record iterator throws InvalidRecordException once the CRC passed: INVALID_RECORD,
    not one of appendToLocalLog's expected exceptions, without a message."""
    refused_as(shared_gateway, version, refusing, make(), ErrorCode.INVALID_RECORD, LOG_START)


@VERSIONS
def test_a_transactional_batch_without_a_producer_id_is_appended(shared_gateway, refusing, version):
    """Kafka verifies and checks only batches with a producer id: such a batch is a plain one."""
    answers, _ = produce(shared_gateway, version, {(refusing, 0): transactional_without_producer()},
                         transactional_id="no-producer-id")
    assert fields(answers[refusing, 0])[:2] == (ErrorCode.NONE, answers[refusing, 0].base_offset)
    assert answers[refusing, 0].base_offset >= LOG_START


STAMP_REFUSED = "One or more records have been rejected due to invalid timestamp"


@VERSIONS
def test_a_producers_log_append_time_stamp_is_refused_on_a_log_append_time_topic(shared_gateway, version):
    """Kafka's validator: INVALID_TIMESTAMP naming every record, with the log start offset."""
    topic = topic_with_log_start(shared_gateway, f"stamped-{version}", message_timestamp_type="LogAppendTime")
    stamp = now_ms()
    answers, frame = produce(shared_gateway, version, {(topic, 0): batch(2, log_append_time=stamp)})
    errors = [(index, f"Invalid timestamp type in message DefaultRecord(offset={index}, timestamp={stamp}, "
                      f"key=2 bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime.")
              for index in (0, 1)]
    assert fields(answers[topic, 0]) == (ErrorCode.INVALID_TIMESTAMP, -1, -1, LOG_START, STAMP_REFUSED, errors)
    assert struct.pack(">hqqq", ErrorCode.INVALID_TIMESTAMP, -1, -1, LOG_START) + wire_record_errors(
        version, errors, STAMP_REFUSED) in frame


def test_a_producers_log_append_time_stamp_is_stored_as_create_time_on_a_create_time_topic(shared_gateway):
    topic = "stamped-create-time"
    create_topic(shared_gateway.bootstrap, topic)
    stamp = now_ms()
    answers, _ = produce(shared_gateway, 9, {(topic, 0): batch(2, timestamp=stamp - 5, log_append_time=stamp)})
    assert fields(answers[topic, 0]) == (ErrorCode.NONE, 0, -1, 0, NO_MESSAGE, [])
    consumer = Consumer({"bootstrap.servers": shared_gateway.bootstrap, "group.id": "stamped",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        got = [consumer.poll(TIMEOUT_S) for _ in range(2)]
    finally:
        consumer.close()
    assert [message.timestamp() for message in got] == [(TIMESTAMP_CREATE_TIME, stamp - 5)] * 2


def producer_id(server, transactional_id: str | None = None) -> tuple[int, int]:
    connection = RawConnection(server.port)
    try:
        answer = connection.call(INIT_PRODUCER_ID, 4, INIT_PRODUCER_ID.Request(
            transactional_id=transactional_id, transaction_timeout_ms=60_000))
    finally:
        connection.close()
    assert answer.error_code == ErrorCode.NONE
    return answer.producer_id, answer.producer_epoch


@VERSIONS
def test_the_producer_states_refusals_have_the_log_start_offset(shared_gateway, refusing, version):
    """OutOfOrderSequenceException and InvalidProducerEpochException, from Kafka's producer state."""
    pid, epoch = producer_id(shared_gateway)
    ok, _ = produce(shared_gateway, version, {(refusing, 0): batch(producer_id=pid, producer_epoch=epoch,
                                                                   base_sequence=0)})
    assert ok[refusing, 0].error_code == ErrorCode.NONE
    gap = batch(producer_id=pid, producer_epoch=epoch, base_sequence=5)
    refused_as(shared_gateway, version, refusing, gap, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, LOG_START)
    newer = batch(producer_id=pid, producer_epoch=epoch + 1, base_sequence=0)
    assert produce(shared_gateway, version, {(refusing, 0): newer})[0][refusing, 0].error_code == ErrorCode.NONE
    older = batch(producer_id=pid, producer_epoch=epoch, base_sequence=1)
    refused_as(shared_gateway, version, refusing, older, ErrorCode.INVALID_PRODUCER_EPOCH, LOG_START)


@pytest.mark.parametrize("timestamp_type", ["LogAppendTime", "CreateTime"])
def test_a_duplicate_is_answered_with_its_originals_offset_and_timestamp(shared_gateway, timestamp_type):
    """Kafka's UnifiedLog answers a retried batch with the original's base offset and, as log
    append time, the original's max timestamp as stored, whatever the topic's timestamp type."""
    topic = topic_with_log_start(shared_gateway, f"retried-{timestamp_type}", message_timestamp_type=timestamp_type)
    pid, epoch = producer_id(shared_gateway)
    created = now_ms() - 1000
    retried = batch(2, timestamp=created, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    first = produce(shared_gateway, 9, {(topic, 0): retried})[0][topic, 0]
    time.sleep(0.01)  # a later append would have a later LogAppendTime
    again, frame = produce(shared_gateway, 9, {(topic, 0): retried})
    original_time = first.log_append_time_ms if timestamp_type == "LogAppendTime" else created
    assert first.base_offset == 3 and first.error_code == ErrorCode.NONE
    assert fields(again[topic, 0]) == (ErrorCode.NONE, 3, original_time, LOG_START, NO_MESSAGE, [])
    assert wire_answer(9, 0, ErrorCode.NONE, 3, LOG_START, log_append_time=original_time) in frame


@pytest.mark.parametrize("version", [8, 11])
def test_transactional_batches_of_two_producers_refuse_the_request(shared_gateway, refusing, version):
    """Kafka's ReplicaManager throws InvalidPidMappingException before any append: its error
    response gives every partition of the request the code and the exception's message."""
    second = "second-producer"
    create_topic(shared_gateway.bootstrap, f"{second}-{version}")
    (pid_a, epoch_a), (pid_b, epoch_b) = producer_id(shared_gateway, f"a-{version}"), producer_id(shared_gateway,
                                                                                                   f"b-{version}")
    answers, frame = produce(shared_gateway, version, {
        (refusing, 0): batch(producer_id=pid_a, producer_epoch=epoch_a, base_sequence=0, transactional=True),
        (f"{second}-{version}", 0): batch(producer_id=pid_b, producer_epoch=epoch_b, base_sequence=0,
                                          transactional=True),
        (refusing, 7): batch()}, transactional_id=f"a-{version}")
    message = "Transactional records contained more than one producer ID"
    for key in ((refusing, 0), (f"{second}-{version}", 0), (refusing, 7)):
        assert fields(answers[key]) == (ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1, -1, message, [])
    assert wire_answer(version, 0, ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1, message) in frame


# The transaction's verification ----------------------------------------------------------------

@pytest.mark.parametrize(("version", "code", "message"), [
    (8, ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"),
    (9, ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"),
    (11, ErrorCode.TRANSACTION_ABORTABLE, NO_MESSAGE)])
def test_a_partition_outside_the_transaction_is_refused_in_kafkas_words(shared_gateway, refusing, version, code,
                                                                        message):
    """The coordinator's TRANSACTION_ABORTABLE, which Kafka's broker turns into INVALID_TXN_STATE
    with its message for clients before Produce v11; before the log: no log start offset."""
    transactional_id = f"outside-{version}"
    pid, epoch = producer_id(shared_gateway, transactional_id)
    outside = batch(producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    refused_as(shared_gateway, version, refusing, outside, code, -1, message, transactional_id=transactional_id)
    fenced = batch(producer_id=pid, producer_epoch=epoch + 1, base_sequence=0, transactional=True)
    refused_as(shared_gateway, version, refusing, fenced, ErrorCode.INVALID_PRODUCER_EPOCH, -1,
               transactional_id=transactional_id)


def test_a_brokers_verification_gets_the_coordinators_codes(shared_gateway, refusing):
    """AddPartitionsToTxn v4 verify_only, as Kafka's brokers ask it: the codes of Kafka's
    handleVerifyPartitionsInTransaction, before any broker's translation."""
    pid, epoch = producer_id(shared_gateway, "verified")
    Transaction = ADD_PARTITIONS.Request.Transactions
    asked = [Transaction(transactional_id="verified", producer_id=pid, producer_epoch=producer_epoch,
                         verify_only=True, topics=[Transaction.Topics(name=refusing, partitions=[0])])
             for producer_epoch in (epoch, epoch + 1)]
    connection = RawConnection(shared_gateway.port)
    try:
        answers = [connection.call(ADD_PARTITIONS, 4, ADD_PARTITIONS.Request(transactions=[transaction]))
                   for transaction in asked]
    finally:
        connection.close()
    assert [a.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code
            for a in answers] == [ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.PRODUCER_FENCED]


# After the append -----------------------------------------------------------------------------

def test_a_batch_not_stored_in_time_keeps_its_offsets(gateway):
    """Kafka's DelayedProduce only sets REQUEST_TIMED_OUT: the base offset, log append time and
    log start offset of the append stay, and there is no message."""
    topic = topic_with_log_start(gateway, "unstored", message_timestamp_type="LogAppendTime")
    (store,) = children(gateway.process.pid)
    os.kill(store, signal.SIGSTOP)
    try:
        for base_offset, version in enumerate((8, 9), 3):
            before = now_ms()
            answers, frame = produce(gateway, version, {(topic, 0): batch()}, timeout_ms=300)
            (code, base, append_time, log_start, message, errors) = fields(answers[topic, 0])
            assert (code, base, log_start, message, errors) == (
                ErrorCode.REQUEST_TIMED_OUT, base_offset, LOG_START, NO_MESSAGE, [])
            assert before <= append_time <= now_ms()
            assert wire_answer(version, 0, ErrorCode.REQUEST_TIMED_OUT, base_offset, LOG_START,
                               log_append_time=append_time) in frame
    finally:
        os.kill(store, signal.SIGCONT)


# Clients report the same errors ----------------------------------------------------------------

def confluent_error(server, topic: str, value: bytes, acks: str) -> int:
    errors = []
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": acks, "retries": 0})
    producer.produce(topic, value, on_delivery=lambda error, _: errors.append(error))
    producer.flush(TIMEOUT_S)
    (error,) = errors
    return error.code()


def kafka_python_error(server, topic: str, value: bytes, acks: int | str) -> type[Exception]:
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks=acks, retries=0)
    try:
        with pytest.raises(Exception) as refused:
            producer.send(topic, value).get(TIMEOUT_S)
    finally:
        producer.close(TIMEOUT_S)
    return refused.type


def test_clients_report_the_refusals_as_before(shared_gateway, refusing):
    """librdkafka and kafka-python go by the code: refusals without a message are reported as ever."""
    assert confluent_error(shared_gateway, refusing, b"needs two stores", "all") == KafkaError.NOT_ENOUGH_REPLICAS
    assert confluent_error(shared_gateway, refusing, bytes(1200), "1") == KafkaError.MSG_SIZE_TOO_LARGE
    assert kafka_python_error(shared_gateway, refusing, b"needs two stores", "all") is NotEnoughReplicasError
    assert kafka_python_error(shared_gateway, refusing, bytes(1200), 1) is MessageSizeTooLargeError
