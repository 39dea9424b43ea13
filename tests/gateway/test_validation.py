"""Produced records validated before they are stored; stored batches that do not decode
never close a connection.

Requests are built with protocol/'s encoders and sent on raw sockets, so that the
batches reach the gateway exactly as written here."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest

from gateway.mesh.store.entry import FIELDS, HEADER_SIZE, encode_header
from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.admin import create_topic
from tests.gateway.clients import TIMEOUT_S, kafka_python_consume
from tests.protocol.records.bad_batches import CORRUPT, INVALID, TIMESTAMP, good, gzip_bomb

PRODUCE, LIST_OFFSETS, FETCH = by_name("Produce"), by_name("ListOffsets"), by_name("Fetch")
LATEST = -1
GOOD_VALUES = [b"good-%d" % n for n in range(3)]
BAD = {**{name: (make, ErrorCode.CORRUPT_MESSAGE) for name, make in CORRUPT.items()},
       **{name: (make, ErrorCode.INVALID_RECORD) for name, make in INVALID.items()}}


class Connection:
    """One client connection on which requests are answered in turn."""

    def __init__(self, port: int, sock: socket.socket | None = None):
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.correlation_id = 0

    def call(self, api, version: int, body):
        self.correlation_id += 1
        request = encode_request(api.key, version, self.correlation_id, "validation", body)
        self.sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", self.sock.recv(4, socket.MSG_WAITALL))[0]
        correlation_id, response = decode_response(api.key, version, self.sock.recv(size, socket.MSG_WAITALL))
        assert correlation_id == self.correlation_id
        return response

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def connection(shared_gateway):
    opened = Connection(shared_gateway.port)
    yield opened
    opened.close()


def produce(connection: Connection, topic: str, batches: dict[int, bytes]) -> dict[int, tuple[int, int]]:
    """{partition: (error code, base offset)} of one acks=all Produce v9 carrying `batches`, with a
    transactional id: Kafka refuses a whole request whose transactional batch comes without one."""
    Data = PRODUCE.Request.TopicData
    response = connection.call(PRODUCE, 9, PRODUCE.Request(
        transactional_id="validation", acks=-1, timeout_ms=int(TIMEOUT_S * 1000), topic_data=[
            Data(name=topic, partition_data=[Data.PartitionData(index=i, records=b) for i, b in batches.items()])]))
    (answers,) = response.responses
    return {p.index: (p.error_code, p.base_offset) for p in answers.partition_responses}


def list_offsets(connection: Connection, topic: str, partitions: list[int], timestamp: int) -> dict:
    """{partition: (error code, offset)} of ListOffsets v7 for `timestamp` in each partition."""
    Topics = LIST_OFFSETS.Request.Topics
    response = connection.call(LIST_OFFSETS, 7, LIST_OFFSETS.Request(replica_id=-1, topics=[
        Topics(name=topic, partitions=[Topics.Partitions(partition_index=p, timestamp=timestamp)
                                       for p in partitions])]))
    return {p.partition_index: (p.error_code, p.offset) for p in response.topics[0].partitions}


def fetch(connection: Connection, topic: str, version: int):
    """Partition 0's answer to a Fetch from offset 0."""
    Topics = FETCH.Request.Topics
    response = connection.call(FETCH, version, FETCH.Request(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            Topics(topic=topic, partitions=[Topics.Partitions(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])]))
    return response.responses[0].partitions[0]


def test_bad_batches_refused_per_partition_good_ones_stored(shared_gateway, connection):
    topic = "validation.mixed"
    create_topic(shared_gateway.bootstrap, topic, partitions=1 + len(BAD))
    batches = {0: good(GOOD_VALUES)} | {n: make() for n, (make, _) in enumerate(BAD.values(), 1)}
    answers = produce(connection, topic, batches)
    assert answers[0] == (ErrorCode.NONE, 0)
    assert {name: answers[n][0] for n, name in enumerate(BAD, 1)} == {
        name: code for name, (_, code) in BAD.items()}
    ends = list_offsets(connection, topic, list(batches), LATEST)
    assert ends == {0: (ErrorCode.NONE, len(GOOD_VALUES))} | {n: (ErrorCode.NONE, 0) for n in range(1, len(batches))}
    got = kafka_python_consume(shared_gateway.bootstrap, topic, list(batches), len(GOOD_VALUES))
    assert [(g.partition, g.offset, g.value) for g in got] == [(0, n, v) for n, v in enumerate(GOOD_VALUES)]
    assert produce(connection, topic, {1: good([b"after"])}) == {1: (ErrorCode.NONE, 0)}  # nothing before it


def stored_in_place_of(data_dir: Path, placeholder: bytes, replacement: bytes) -> None:
    """Put `replacement` where the stores hold `placeholder` (same size), as if it had been
    stored as it is: the store entry's CRC is made right, the gateway's offset and epoch kept."""
    found = []
    for path in data_dir.rglob("*.log"):
        content = path.read_bytes()
        at = content.find(placeholder[16:])  # from the magic byte: the gateway stamps what is before
        if at >= 0:
            found.append((path, content, at - 16))
    assert len(found) == 1, f"the placeholder is stored {len(found)} times"
    path, content, start = found[0]
    size, sequence, timestamp_ms = FIELDS.unpack_from(content, start - FIELDS.size)
    assert size == len(placeholder)
    entry = content[start:start + 16] + replacement[16:]
    header = encode_header(sequence, entry, timestamp_ms, size)
    path.write_bytes(content[:start - HEADER_SIZE] + header + entry + content[start + size:])


def test_stored_batch_that_does_not_decode(gateway):
    topic, bomb = "validation.stored", gzip_bomb()
    placeholder = next(blob for n in range(len(bomb), 0, -1) if len(blob := good([b"x" * n])) == len(bomb))
    create_topic(gateway.bootstrap, topic)
    connection = Connection(gateway.port)
    try:
        assert produce(connection, topic, {0: placeholder}) == {0: (ErrorCode.NONE, 0)}
        later = good([b"later"], timestamp=TIMESTAMP + 10)
        assert produce(connection, topic, {0: later}) == {0: (ErrorCode.NONE, 1)}
    finally:
        connection.close()
    gateway.stop()
    stored_in_place_of(gateway.data_dir, placeholder, bomb)
    gateway.start()
    connection = Connection(gateway.port)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while list_offsets(connection, topic, [0], LATEST) != {0: (ErrorCode.NONE, 2)}:  # the topic is back
            assert time.monotonic() < deadline, "the partition did not come back after the restart"
            time.sleep(0.1)
        assert list_offsets(connection, topic, [0], TIMESTAMP) == {0: (ErrorCode.CORRUPT_MESSAGE, -1)}
        assert list_offsets(connection, topic, [0], TIMESTAMP + 5) == {0: (ErrorCode.NONE, 1)}
        passed = fetch(connection, topic, 12)
        assert passed.error_code == ErrorCode.NONE
        assert bytes(passed.records)[16:len(bomb)] == bomb[16:]  # as stored, not decoded
        assert fetch(connection, topic, 3).error_code == ErrorCode.CORRUPT_MESSAGE  # down-conversion
    finally:
        connection.close()

