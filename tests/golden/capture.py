"""A fake one-broker Kafka cluster that records every request a client sends.

Each connection gets a thread that reads size-prefixed frames, keeps the raw
bytes, decodes them with our codec and answers with the smallest valid
response our encoder can build, so that real clients carry on to the next
request. Anything the codec cannot decode, or decodes to a value that does
not encode back to the same bytes, is kept in `failures` with its bytes.
"""

from __future__ import annotations

import socket
import struct
import threading
import traceback
import uuid
from dataclasses import dataclass
from typing import Any, NoReturn

from protocol.errors import DecodeError, EncodeError
from protocol.kafka import (
    ALL,
    UnsupportedRequest,
    by_name,
    decode_request,
    encode_request,
    encode_response,
)
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Record, build_batch, split_records

NODE_ID = 0
CLUSTER_ID = "golden-capture"
GENERATION_ID = 1
PRODUCER_ID = 1000
LATEST = -1  # the ListOffsets timestamp that asks for the end offset
SIZE = struct.Struct(">i")
POLL_S = 0.05  # how often blocked threads look at the stop flag
MAX_FETCH_WAIT_S = 0.1  # an empty Fetch is held this long at most, as a broker would

# Highest version advertised per API. Above these, the requests name topics
# by id (Produce 13, Fetch 13, OffsetCommit 10, OffsetFetch 10) or belong to
# protocols this server does not play: KIP-890 transactions (Produce 12),
# KIP-848 member epochs (OffsetCommit 9, OffsetFetch 9), tiered-storage
# offsets and timeouts (ListOffsets 9+), batched coordinator lookups beyond
# v4 (share groups, FindCoordinator 5+), two-phase commit (InitProducerId 6).
# Only the APIs answered here are advertised, so no client strays elsewhere.
VERSION_CAPS = {
    "ApiVersions": 4, "Metadata": 12, "Produce": 11, "Fetch": 12, "ListOffsets": 8,
    "FindCoordinator": 4, "JoinGroup": 9, "SyncGroup": 5, "Heartbeat": 4, "LeaveGroup": 5,
    "OffsetCommit": 8, "OffsetFetch": 8, "InitProducerId": 5,
}


class HangUp(Exception):
    """The server cannot go on with this connection; the reason is in `failures`."""


@dataclass
class Captured:
    """One request frame as received and as our codec decoded it."""

    raw: bytes
    api: str
    version: int
    header: Any
    body: Any


def versioned(cls: type, version: int, **values: Any) -> Any:
    """`cls(**values)` without the fields that `version` lacks."""
    present = {field.name for field in cls._fields if version in field.version_range}
    return cls(**{name: value for name, value in values.items() if name in present})


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"golden-capture/{name}")


class CaptureServer:
    """Serves 127.0.0.1 on a free port until `stop`; use it as a context manager.

    `fetchable` maps (topic, partition) to records that Fetch hands out as one
    v2 batch starting at offset 0; every other partition is empty.
    """

    def __init__(self, fetchable: dict[tuple[str, int], list[Record]] | None = None):
        self.fetchable = {
            key: build_batch([r._replace(offset=i) for i, r in enumerate(records)])
            for key, records in (fetchable or {}).items()
        }
        self.end_offsets = {key: len(records) for key, records in (fetchable or {}).items()}
        self.topics = {topic for topic, _ in self.end_offsets}
        self.captured: list[Captured] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL_S)
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, name="capture-accept")]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> CaptureServer:
        self._threads[0].start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        # The accept thread comes first: once it is joined, no thread is added.
        for thread in self._threads:
            if thread.is_alive():
                thread.join()
        self._listener.close()

    def requests(self, api: str) -> list[Captured]:
        """The captured requests of one API ("Produce"), in arrival order."""
        with self._lock:
            return [c for c in self.captured if c.api == api]

    def bodies(self, api: str) -> list[Any]:
        return [c.body for c in self.requests(api)]

    # -- connections ------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._serve, args=(connection,), name="capture-conn")
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(POLL_S)
        with connection:
            try:
                self._exchange(connection)
            except (OSError, HangUp):
                return  # the client hung up while we answered, or we on it
            except Exception:  # noqa: BLE001 - a bug here must fail the test, not hang it
                self._note(traceback.format_exc())

    def _exchange(self, connection: socket.socket) -> None:
        while (size := self._read(connection, SIZE.size)) is not None:
            frame = self._read(connection, SIZE.unpack(size)[0])
            if frame is None:
                return
            response = self._respond(frame)
            if response is not None:
                connection.sendall(SIZE.pack(len(response)) + response)

    def _read(self, connection: socket.socket, size: int) -> bytes | None:
        """`size` bytes, or None once the peer closed or the server stops."""
        data = bytearray()
        while len(data) < size:
            try:
                chunk = connection.recv(size - len(data))
            except TimeoutError:
                # Stop only when idle, so that a request already sent is still captured.
                if self._stopping.is_set():
                    return None
                continue
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    # -- requests ---------------------------------------------------------

    def _respond(self, frame: bytes) -> bytes | None:
        """The response frame; None when none is due (acks=0)."""
        try:
            header, body = decode_request(frame)
        except UnsupportedRequest as error:
            return self._refuse(frame, error)
        except DecodeError as error:
            self._fail(f"{error} in {frame.hex()}")
        api = ALL[header.api_key]
        with self._lock:
            self.captured.append(Captured(frame, api.name, header.api_version, header, body))
        again = encode_request(header.api_key, header.api_version, header.correlation_id,
                               header.client_id, body)
        if bytes(again) != frame:
            self._note(f"{api.name} v{header.api_version} re-encodes differently:\n"
                       f"  sent    {frame.hex()}\n  ours    {again.hex()}\n  decoded {body!r}")
        answer = getattr(self, f"_{api.name}", None)
        if answer is None:
            self._fail(f"no answer for {api.name} v{header.api_version}")
        response = answer(header.api_version, body)
        if response is None:
            return None
        try:
            return bytes(encode_response(header.api_key, header.api_version,
                                         header.correlation_id, response))
        except EncodeError as error:
            self._fail(f"cannot answer {api.name} v{header.api_version}: {error}")

    def _refuse(self, frame: bytes, error: UnsupportedRequest) -> bytes:
        # A client probing with an ApiVersions version we lack gets Kafka's
        # answer: v0 with UNSUPPORTED_VERSION, and retries with a lower one.
        if error.api_key != by_name("ApiVersions").key:
            self._fail(f"{error} (key {error.api_key} v{error.api_version}) in {frame.hex()}")
        body = self._ApiVersions(0, None)
        body.error_code = ErrorCode.UNSUPPORTED_VERSION
        return bytes(encode_response(error.api_key, 0, error.correlation_id, body))

    def _note(self, failure: str) -> None:
        with self._lock:
            self.failures.append(failure)

    def _fail(self, failure: str) -> NoReturn:
        self._note(failure)
        raise HangUp(failure)

    # -- answers, one per API (named after it) -------------------------------

    def _ApiVersions(self, version: int, request) -> Any:  # noqa: N802 - API name
        response = by_name("ApiVersions").Response
        return response(api_keys=[
            response.ApiKeys(api_key=by_name(name).key,
                             min_version=by_name(name).version_range.low,
                             max_version=min(cap, by_name(name).version_range.high))
            for name, cap in VERSION_CAPS.items()
        ])

    def _Metadata(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("Metadata").Response
        # All topics: null from v1, an empty list in v0 (where v1+ means none).
        wants_all = request.topics is None or (version == 0 and not request.topics)
        with self._lock:
            if wants_all:
                names = sorted(self.topics)
            else:
                names = [topic.name for topic in request.topics]
                self.topics.update(names)
        return response(
            brokers=[response.Brokers(node_id=NODE_ID, host="127.0.0.1", port=self.port)],
            cluster_id=CLUSTER_ID,
            controller_id=NODE_ID,
            topics=[
                response.Topics(name=name, topic_id=topic_id(name), partitions=[
                    response.Topics.Partitions(partition_index=0, leader_id=NODE_ID, leader_epoch=0,
                                               replica_nodes=[NODE_ID], isr_nodes=[NODE_ID]),
                ])
                for name in names
            ],
        )

    def _Produce(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("Produce").Response
        topics = []
        for topic in request.topic_data:
            partitions = []
            for partition in topic.partition_data:
                entries = split_records(partition.records).entries
                count = sum(len(entry.records()) for entry in entries)
                with self._lock:
                    key = (topic.name, partition.index)
                    base_offset = self.end_offsets.get(key, 0)
                    self.end_offsets[key] = base_offset + count
                partitions.append(response.Responses.PartitionResponses(
                    index=partition.index, base_offset=base_offset, log_start_offset=0))
            topics.append(response.Responses(name=topic.name, partition_responses=partitions))
        return None if request.acks == 0 else response(responses=topics)

    def _Fetch(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("Fetch").Response
        topics = [
            response.Responses(topic=topic.topic, partitions=[
                self._fetched(response.Responses.Partitions, topic.topic, partition)
                for partition in topic.partitions
            ])
            for topic in request.topics
        ]
        if not any(p.records for t in topics for p in t.partitions):
            self._stopping.wait(min(request.max_wait_ms / 1000, MAX_FETCH_WAIT_S))
        return response(session_id=0, responses=topics)

    def _fetched(self, partition_class: type, topic: str, partition) -> Any:
        key = (topic, partition.partition)
        end = self.end_offsets.get(key, 0)
        batch = self.fetchable.get(key) if partition.fetch_offset < end else None
        return partition_class(partition_index=partition.partition, high_watermark=end,
                               last_stable_offset=end, log_start_offset=0, records=batch)

    def _ListOffsets(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("ListOffsets").Response
        topics = []
        for topic in request.topics:
            partitions = []
            for partition in topic.partitions:
                end = self.end_offsets.get((topic.name, partition.partition_index), 0)
                offset = end if partition.timestamp == LATEST else 0
                partitions.append(versioned(
                    response.Topics.Partitions, version, partition_index=partition.partition_index,
                    old_style_offsets=[offset], offset=offset, leader_epoch=0))
            topics.append(response.Topics(name=topic.name, partitions=partitions))
        return response(topics=topics)

    def _FindCoordinator(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("FindCoordinator").Response
        address = {"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port}
        return versioned(response, version, **address, coordinators=[
            response.Coordinators(key=key, **address) for key in request.coordinator_keys
        ])

    def _JoinGroup(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("JoinGroup").Response
        member_id = request.member_id or f"{request.group_id}-member-1"
        chosen = request.protocols[0]
        return response(
            generation_id=GENERATION_ID, protocol_type=request.protocol_type,
            protocol_name=chosen.name, leader=member_id, member_id=member_id,
            members=[response.Members(member_id=member_id, metadata=chosen.metadata)],
        )

    def _SyncGroup(self, version: int, request) -> Any:  # noqa: N802
        mine = [a.assignment for a in request.assignments if a.member_id == request.member_id]
        return by_name("SyncGroup").Response(
            protocol_type=request.protocol_type, protocol_name=request.protocol_name,
            assignment=mine[0] if mine else b"",
        )

    def _OffsetCommit(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("OffsetCommit").Response
        return response(topics=[
            response.Topics(name=topic.name, partitions=[
                response.Topics.Partitions(partition_index=p.partition_index)
                for p in topic.partitions
            ])
            for topic in request.topics
        ])

    def _OffsetFetch(self, version: int, request) -> Any:  # noqa: N802
        # Nothing was ever committed here: every asked-for partition gets -1.
        response = by_name("OffsetFetch").Response
        if version < 8:
            return response(topics=[
                response.Topics(name=topic.name, partitions=[
                    response.Topics.Partitions(partition_index=index, committed_offset=-1)
                    for index in topic.partition_indexes
                ])
                for topic in request.topics or []
            ])
        return response(groups=[
            response.Groups(group_id=group.group_id, topics=[
                response.Groups.Topics(name=topic.name, partitions=[
                    response.Groups.Topics.Partitions(partition_index=index, committed_offset=-1)
                    for index in topic.partition_indexes
                ])
                for topic in group.topics or []
            ])
            for group in request.groups
        ])

    def _Heartbeat(self, version: int, request) -> Any:  # noqa: N802
        return by_name("Heartbeat").Response()

    def _LeaveGroup(self, version: int, request) -> Any:  # noqa: N802
        response = by_name("LeaveGroup").Response
        return response(members=[
            response.Members(member_id=m.member_id, group_instance_id=m.group_instance_id)
            for m in request.members
        ])

    def _InitProducerId(self, version: int, request) -> Any:  # noqa: N802
        return by_name("InitProducerId").Response(producer_id=PRODUCER_ID, producer_epoch=0)

