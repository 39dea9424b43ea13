"""What the golden tests send, and the checks every client's capture must pass.

Each check reads the requests our codec decoded and compares them with what
the client was told to do, so a failure names the API, the field and both
values.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, replace
from typing import Any

from protocol.records import Codec, Record, split_records

from .capture import GENERATION_ID, PRODUCER_ID, CaptureServer

T0 = 1_700_000_000_000
# Explicit timestamps, a null key, a null value, an empty header value and a
# non-ASCII header key: the corners a codec gets wrong first.
SENT = (
    Record(0, T0, b"key-0", b"value-0", (("trace-id", b"abc123"), ("empty", b""))),
    Record(1, T0 + 1, None, b"compressible " * 40, ()),
    Record(2, T0 + 2000, b"key-2", None, (("caf\u00e9", b"\x00\xff"),)),
)
# What Fetch hands to consumers of FETCHED_TOPIC partition 0.
FETCHED_TOPIC = "golden-fetched"
FETCHED = (
    Record(0, T0, b"fk-0", b"fetched-0", (("h", b"1"),)),
    Record(1, T0 + 5, None, b"fetched-1", ()),
    Record(2, T0 + 9, b"fk-2", b"fetched-2", ()),
)
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
EARLIEST = -2
WAIT_S = 10.0
# Every client sends its request timeout as the Produce timeout_ms.
REQUEST_TIMEOUT_MS = 7000


def captured_server() -> CaptureServer:
    return CaptureServer({(FETCHED_TOPIC, 0): list(FETCHED)})


def wait_for(server: CaptureServer, api: str, timeout_s: float = WAIT_S) -> None:
    """Block until `api` was captured; fail with what was captured instead."""
    deadline = time.monotonic() + timeout_s
    while not server.requests(api):
        assert time.monotonic() < deadline, f"no {api} within {timeout_s}s; got {apis(server)}"
        time.sleep(0.02)


def apis(server: CaptureServer) -> list[str]:
    return [f"{c.api} v{c.version}" for c in server.captured]


def assert_clean(server: CaptureServer, client_id: str) -> None:
    """Every frame decoded, re-encoded to the same bytes and named the client."""
    assert not server.failures, "\n".join(server.failures)
    assert {c.header.client_id for c in server.captured} == {client_id}, apis(server)


def assert_api_versions(server: CaptureServer, software: tuple[str, str] | None) -> None:
    """ApiVersions came first; from v3 it names the client software."""
    first = server.captured[0]
    assert first.api == "ApiVersions", apis(server)
    if software is not None:
        assert first.version >= 3
        assert (first.body.client_software_name, first.body.client_software_version) == software


def metadata_topics(server: CaptureServer) -> set[str]:
    return {t.name for body in server.bodies("Metadata") for t in body.topics or []}


# -- produce ------------------------------------------------------------------


def produced_entries(server: CaptureServer, topic: str) -> list[Any]:
    """The CRC-checked batches or messages produced to `topic`, in order."""
    entries = []
    for body in server.bodies("Produce"):
        assert [t.name for t in body.topic_data] == [topic]
        (partition,) = body.topic_data[0].partition_data
        assert partition.index == 0
        for entry in split_records(partition.records).entries:
            entry.verify_crc()
            entries.append(entry)
    assert entries, f"nothing produced to {topic}; got {apis(server)}"
    return entries


def assert_records(entries: list[Any], sent: tuple[Record, ...] | list[Record]) -> None:
    """The entries hold exactly `sent`, with consecutive offsets in each entry."""
    records = []
    for entry in entries:
        inside = entry.records()
        offsets = [r.offset for r in inside]
        assert offsets == list(range(offsets[0], offsets[0] + len(inside))), offsets
        records += inside
    assert [r._replace(offset=0) for r in records] == [r._replace(offset=0) for r in sent]


@dataclass
class Produced:
    """What a producer was configured with, as the Produce request carries it."""

    topic: str
    acks: int
    timeout_ms: int
    codec: str = "none"
    producer_id: int = -1
    transactional_id: str | None = None


def assert_produce(server: CaptureServer, expected: Produced, sent=SENT, magic: int = 2) -> None:
    assert expected.topic in metadata_topics(server)
    bodies = server.bodies("Produce")
    assert bodies, apis(server)
    for body in bodies:
        assert (body.acks, body.timeout_ms, body.transactional_id) == (
            expected.acks, expected.timeout_ms, expected.transactional_id)
    entries = produced_entries(server, expected.topic)
    for entry in entries:
        assert (entry.magic, entry.compression) == (magic, Codec[expected.codec.upper()])
        if magic == 2:
            epoch = 0 if expected.producer_id >= 0 else -1
            assert (entry.producer_id, entry.producer_epoch) == (expected.producer_id, epoch)
    if expected.producer_id >= 0:
        assert entries[0].base_sequence == 0
    assert_records(entries, sent)


def assert_idempotent_produce(server: CaptureServer, client_id: str,
                              software: tuple[str, str] | None, expected: Produced) -> None:
    """A fresh idempotent producer: ApiVersions, InitProducerId, then batches under its id."""
    assert_clean(server, client_id)
    assert_api_versions(server, software)
    assert_init_producer_id(server, None)
    assert_produce(server, replace(expected, producer_id=PRODUCER_ID))


def assert_plain_produce(server: CaptureServer, client_id: str, expected: Produced) -> None:
    """A producer without idempotence asks for no producer id."""
    assert_clean(server, client_id)
    assert not server.requests("InitProducerId"), apis(server)
    assert_produce(server, expected)


def assert_init_producer_id(server: CaptureServer, transactional_id: str | None,
                            transaction_timeout_ms: int | None = None) -> None:
    (body,) = server.bodies("InitProducerId")
    assert body.transactional_id == transactional_id
    if transaction_timeout_ms is not None:
        assert body.transaction_timeout_ms == transaction_timeout_ms
    if body.producer_id != -1 or body.producer_epoch != -1:
        raise AssertionError(f"a fresh producer asked to bump {body!r}")
    if transactional_id is not None:
        assert_coordinator_keys(server, transactional_id, key_type=1)


# -- consumer groups ----------------------------------------------------------


def assert_coordinator_keys(server: CaptureServer, key: str, key_type: int) -> None:
    bodies = server.bodies("FindCoordinator")
    assert bodies, apis(server)
    for body in bodies:
        assert (body.coordinator_keys or [body.key], body.key_type) == ([key], key_type)


# The consumer protocol's subscription and assignment are classic-encoded
# structs inside JoinGroup and SyncGroup bytes: int16 version, then arrays.


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">h", data, pos)
    return data[pos + 2 : pos + 2 + size].decode(), pos + 2 + size


def _int32(data: bytes, pos: int) -> tuple[int, int]:
    return struct.unpack_from(">i", data, pos)[0], pos + 4


def _array(data: bytes, pos: int, read_item) -> tuple[list[Any], int]:
    count, pos = _int32(data, pos)
    items = []
    for _ in range(count):
        item, pos = read_item(data, pos)
        items.append(item)
    return items, pos


def _topic_partitions(data: bytes, pos: int) -> tuple[tuple[str, list[int]], int]:
    topic, pos = _string(data, pos)
    partitions, pos = _array(data, pos, _int32)
    return (topic, partitions), pos


def subscribed_topics(metadata: bytes) -> list[str]:
    return _array(metadata, 2, _string)[0]


def assigned(assignment: bytes) -> dict[str, list[int]]:
    return dict(_array(assignment, 2, _topic_partitions)[0])


SESSION_TIMEOUT_MS = 6000
REBALANCE_TIMEOUT_MS = 8000
HEARTBEAT_INTERVAL_MS = 100  # short, so that a Heartbeat comes within the test
FETCH_MAX_WAIT_MS = 200
FETCH_MIN_BYTES = 3
PARTITION_MAX_BYTES = 65536
# The consumer settings under the keyword names kafka-python and aiokafka share.
PYTHON_CONSUMER_CONFIG = {
    "auto_offset_reset": "earliest", "enable_auto_commit": False,
    "session_timeout_ms": SESSION_TIMEOUT_MS, "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
    "fetch_max_wait_ms": FETCH_MAX_WAIT_MS, "fetch_min_bytes": FETCH_MIN_BYTES,
    "max_partition_fetch_bytes": PARTITION_MAX_BYTES,
}


@dataclass
class Consumed:
    """What a group consumer was configured with, as its requests carry it."""

    group: str
    isolation_level: int
    assignors: tuple[str, ...]
    session_timeout_ms: int = SESSION_TIMEOUT_MS
    rebalance_timeout_ms: int = REBALANCE_TIMEOUT_MS
    max_wait_ms: int = FETCH_MAX_WAIT_MS
    min_bytes: int = FETCH_MIN_BYTES
    partition_max_bytes: int = PARTITION_MAX_BYTES


def assert_group_join(server: CaptureServer, expected: Consumed) -> str:
    """FindCoordinator, JoinGroup and SyncGroup; the member id the client used.

    A client may rejoin (kafka-python does when it assigned from metadata
    that lacked the topic), so every join after the first carries the member
    id it got.
    """
    assert_coordinator_keys(server, expected.group, key_type=0)
    member_id = f"{expected.group}-member-1"
    joins = server.bodies("JoinGroup")
    assert [join.member_id for join in joins] == ["", *[member_id] * (len(joins) - 1)]
    for join in joins:
        assert (join.group_id, join.session_timeout_ms, join.rebalance_timeout_ms,
                join.group_instance_id, join.protocol_type) == (
            expected.group, expected.session_timeout_ms, expected.rebalance_timeout_ms, None,
            "consumer")
        assert tuple(p.name for p in join.protocols) == expected.assignors
        for protocol in join.protocols:
            assert subscribed_topics(protocol.metadata) == [FETCHED_TOPIC]
    syncs = server.bodies("SyncGroup")
    assert len(syncs) == len(joins), apis(server)
    for sync in syncs:
        assert (sync.group_id, sync.generation_id, sync.member_id) == (
            expected.group, GENERATION_ID, member_id)
        assert [a.member_id for a in sync.assignments] == [member_id]
    # Until the leader's metadata names the topic it assigns nothing, and rejoins.
    plans = [assigned(sync.assignments[0].assignment) for sync in syncs]
    assert plans[-1] == {FETCHED_TOPIC: [0]}
    assert all(plan in ({}, plans[-1]) for plan in plans), plans
    return member_id


def assert_consumer_run(server: CaptureServer, client_id: str, software: tuple[str, str] | None,
                        records: list[tuple[Any, ...]], expected: Consumed) -> None:
    """A group consumer read FETCHED, committed, heartbeat and left."""
    assert_clean(server, client_id)
    assert_api_versions(server, software)
    assert_consumed(records)
    assert_consumer_group(server, expected)


def assert_consumer_group(server: CaptureServer, expected: Consumed) -> None:
    """The whole life of a group consumer that read FETCHED and committed."""
    assert FETCHED_TOPIC in metadata_topics(server)
    member_id = assert_group_join(server, expected)
    for beat in server.bodies("Heartbeat"):
        assert (beat.group_id, beat.generation_id, beat.member_id) == (
            expected.group, GENERATION_ID, member_id)
    offset_fetch = server.bodies("OffsetFetch")[0]
    groups = offset_fetch.groups or [offset_fetch]
    assert [(g.group_id, [(t.name, t.partition_indexes) for t in g.topics]) for g in groups] == [
        (expected.group, [(FETCHED_TOPIC, [0])])]
    assert_list_offsets(server, expected.isolation_level)
    assert_fetch(server, expected)
    commit = server.bodies("OffsetCommit")[-1]
    assert (commit.group_id, commit.generation_id_or_member_epoch, commit.member_id) == (
        expected.group, GENERATION_ID, member_id)
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in commit.topics] == [(FETCHED_TOPIC, [(0, len(FETCHED))])]
    (leave,) = server.bodies("LeaveGroup")
    left = [m.member_id for m in leave.members] or [leave.member_id]
    assert (leave.group_id, left) == (expected.group, [member_id])


def assert_list_offsets(server: CaptureServer, isolation_level: int) -> None:
    bodies = server.bodies("ListOffsets")
    assert bodies, apis(server)
    for body in bodies:
        assert (body.replica_id, body.isolation_level) == (-1, isolation_level)
        assert [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions])
                for t in body.topics] == [(FETCHED_TOPIC, [(0, EARLIEST)])]


def assert_fetch(server: CaptureServer, expected: Consumed) -> None:
    bodies = server.bodies("Fetch")
    assert bodies, apis(server)
    first = bodies[0]
    assert (first.replica_id, first.max_wait_ms, first.min_bytes, first.isolation_level) == (
        -1, expected.max_wait_ms, expected.min_bytes, expected.isolation_level)
    assert [(t.topic, [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in t.partitions])
            for t in first.topics] == [(FETCHED_TOPIC, [(0, 0, expected.partition_max_bytes)])]


def assert_consumed(records: list[tuple[Any, ...]]) -> None:
    """What the client handed the application is FETCHED: our Fetch encoding reads back."""
    assert records == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in FETCHED]
