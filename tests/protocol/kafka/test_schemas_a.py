"""Declarations of group A APIs: ranges and facts checked against Kafka's message definitions."""

import uuid

import pytest

from protocol.kafka import REQUEST, RESPONSE, decode_body, encode_body
from protocol.kafka.apis import (
    describe_groups,
    fetch,
    find_coordinator,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sync_group,
)
from protocol.kafka.message_classes import camel, message_classes
from protocol.kafka.schema import Api, Field, Versions

# (module, key, Kafka name, versions, flexible versions) as Kafka 4.1 defines them,
# with the versions KIP-896 dropped from Kafka 4.0 kept from 0.
EXPECTED = [
    (produce, 0, "Produce", "0-13", "9+"),
    (fetch, 1, "Fetch", "0-17", "12+"),
    (list_offsets, 2, "ListOffsets", "0-10", "6+"),
    (metadata, 3, "Metadata", "0-13", "9+"),
    (offset_commit, 8, "OffsetCommit", "0-10", "8+"),
    (offset_fetch, 9, "OffsetFetch", "0-10", "6+"),
    (find_coordinator, 10, "FindCoordinator", "0-6", "3+"),
    (join_group, 11, "JoinGroup", "0-9", "6+"),
    (leave_group, 13, "LeaveGroup", "0-5", "4+"),
    (sync_group, 14, "SyncGroup", "0-5", "4+"),
    (describe_groups, 15, "DescribeGroups", "0-6", "5+"),
    (list_groups, 16, "ListGroups", "0-5", "3+"),
]
APIS = [module.API for module, *_ in EXPECTED]


@pytest.mark.parametrize(("module", "key", "name", "versions", "flexible"), EXPECTED)
def test_identity_and_ranges(module, key, name, versions, flexible):
    api = module.API
    assert (api.key, api.name, api.versions, api.flexible) == (key, name, versions, flexible)
    assert api.version_range.low == 0


def field(fields: tuple[Field, ...], path: str) -> Field:
    """The field at a dotted path, e.g. "topics.partitions.records"."""
    head, _, rest = path.partition(".")
    (found,) = [f for f in fields if f.name == head]
    return field(found.fields, rest) if rest else found


def names_in(fields: tuple[Field, ...], version: int) -> list[str]:
    return [f.name for f in fields if version in f.version_range]


def walk(fields: tuple[Field, ...], parent: Versions):
    for f in fields:
        yield f, parent
        yield from walk(f.fields, f.version_range)


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_declarations_are_consistent(api: Api):
    top = api.version_range
    for message in (api.request, api.response):
        for f, parent in walk(message, top):
            versions = f.version_range
            assert versions, f.name
            # A field exists in some version of the struct that holds it.
            assert max(parent.low, versions.low) <= min(parent.high, versions.high), f.name
            if f.nullable_range:
                assert versions.low <= f.nullable_range.low, f.name
            if f.tag is not None:
                assert api.flexible_range.low <= f.tagged_range.low, f.name


def tags_at(fields: tuple[Field, ...], version: int) -> list[int]:
    return [f.tag for f in fields if f.tag is not None and version in f.tagged_range]


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_tags_unique_within_each_struct(api: Api):
    def structs(fields):
        yield fields
        for f in fields:
            if f.fields:
                yield from structs(f.fields)

    for message in (api.request, api.response):
        for fields in structs(message):
            for version in range(api.version_range.low, api.version_range.high + 1):
                tags = tags_at(fields, version)
                assert len(tags) == len(set(tags)), (api.name, version)


def test_produce():
    api = produce.API
    assert "transactional_id" not in names_in(api.request, 2)
    txn = field(api.request, "transactional_id")
    assert txn.versions == "3+" and txn.nullable == "3+" and txn.default is None
    assert names_in(api.request[3].fields, 12) == ["name", "partition_data"]
    assert names_in(api.request[3].fields, 13) == ["topic_id", "partition_data"]
    assert field(api.request, "topic_data.partition_data.records").type == "records"
    part = field(api.response, "responses.partition_responses")
    assert field(part.fields, "log_append_time_ms").default == -1
    assert field(part.fields, "current_leader").tag == 0
    assert field(api.response, "node_endpoints").tag == 0
    assert names_in(api.response, 0) == ["responses"]


def test_fetch():
    api = fetch.API
    assert names_in(api.request, 0) == ["replica_id", "max_wait_ms", "min_bytes", "topics"]
    assert field(api.request, "replica_id").versions == "0-14"
    state = field(api.request, "replica_state")
    assert (state.type, state.tag, state.tagged) == ("struct", 1, "15+")
    assert field(api.request, "max_bytes").default == 0x7FFFFFFF
    assert field(api.request, "cluster_id").tagged == "12+"
    assert field(api.request, "topics.topic").versions == "0-12"
    assert field(api.request, "topics.topic_id").versions == "13+"
    assert field(api.request, "topics.partitions.replica_directory_id").tagged == "17+"
    assert field(api.request, "forgotten_topics_data.topic").versions == "7-12"
    partition = field(api.response, "responses.partitions").fields
    assert [f.tag for f in partition if f.tag is not None] == [0, 1, 2]
    assert field(partition, "aborted_transactions").nullable == "4+"
    assert field(api.response, "node_endpoints").tagged == "16+"
    assert names_in(api.response, 0) == ["responses"]


def test_list_offsets():
    api = list_offsets.API
    assert field(api.request, "topics.partitions.max_num_offsets").versions == "0"
    assert field(api.request, "topics.partitions.max_num_offsets").default == 1
    assert field(api.response, "topics.partitions.old_style_offsets").type == "[]int64"
    assert names_in(field(api.response, "topics.partitions").fields, 1) == [
        "partition_index", "error_code", "timestamp", "offset",
    ]
    assert field(api.request, "timeout_ms").versions == "10+"


def test_metadata():
    api = metadata.API
    assert field(api.request, "topics").nullable == "1+"
    assert field(api.request, "allow_auto_topic_creation").default is True
    assert field(api.request, "include_cluster_authorized_operations").versions == "8-10"
    assert names_in(api.response, 0) == ["brokers", "topics"]
    assert field(api.response, "topics.name").nullable == "12+"
    assert field(api.response, "cluster_authorized_operations").versions == "8-10"
    assert field(api.response, "error_code").versions == "13+"
    assert field(api.response, "topics.topic_authorized_operations").default == -2147483648


def test_offset_commit():
    api = offset_commit.API
    assert names_in(api.request, 0) == ["group_id", "topics"]
    assert field(api.request, "retention_time_ms").versions == "2-4"
    assert field(api.request, "topics.partitions.commit_timestamp").versions == "1"
    assert field(api.request, "topics.name").versions == "0-9"
    assert field(api.response, "topics.topic_id").versions == "10+"


def test_offset_fetch():
    api = offset_fetch.API
    assert field(api.request, "topics").versions == "0-7"
    assert field(api.request, "topics").nullable == "2-7"
    assert field(api.request, "groups.topics").nullable == "8+"
    assert field(api.request, "groups.topics.name").versions == "8-9"
    assert field(api.request, "groups.member_id").default is None
    assert names_in(api.response, 1) == ["topics"]
    assert names_in(api.response, 8) == ["throttle_time_ms", "groups"]
    assert field(api.response, "topics.partitions.committed_leader_epoch").versions == "5-7"


def test_find_coordinator():
    api = find_coordinator.API
    assert names_in(api.request, 3) == ["key", "key_type"]
    assert names_in(api.request, 4) == ["key_type", "coordinator_keys"]
    assert field(api.request, "coordinator_keys").type == "[]string"
    assert names_in(api.response, 4) == ["throttle_time_ms", "coordinators"]


def test_join_group():
    api = join_group.API
    assert names_in(api.request, 0) == [
        "group_id", "session_timeout_ms", "member_id", "protocol_type", "protocols",
    ]
    assert field(api.request, "rebalance_timeout_ms").default == -1
    assert field(api.response, "protocol_name").nullable == "7+"
    assert field(api.response, "skip_assignment").versions == "9+"
    assert field(api.response, "generation_id").default == -1


def test_leave_group():
    api = leave_group.API
    assert field(api.request, "member_id").versions == "0-2"
    assert field(api.request, "members.reason").versions == "5+"
    assert names_in(api.response, 2) == ["throttle_time_ms", "error_code"]


def test_sync_group():
    api = sync_group.API
    assert names_in(api.response, 5) == [
        "throttle_time_ms", "error_code", "protocol_type", "protocol_name", "assignment",
    ]
    assert field(api.request, "group_instance_id").versions == "3+"


def test_describe_groups():
    api = describe_groups.API
    assert field(api.response, "groups.error_message").versions == "6+"
    assert field(api.response, "groups.members.group_instance_id").nullable == "4+"
    assert field(api.response, "groups.authorized_operations").default == -2147483648


def test_list_groups():
    api = list_groups.API
    assert names_in(api.request, 3) == []
    assert names_in(api.request, 5) == ["states_filter", "types_filter"]
    assert names_in(field(api.response, "groups").fields, 5)[-1] == "group_type"


SAMPLES = {
    "bool": True, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uuid": uuid.UUID(int=5),
    "string": "s", "bytes": b"b", "records": b"r",
}


def sample(cls: type, version: int):
    """A message with every field of `version` set away from its default, lists of one."""
    values = {}
    for f in cls._fields:
        if version not in f.version_range:
            continue
        if f.type == "[]":
            values[f.name] = [sample(getattr(cls, camel(f.name)), version)]
        elif f.type == "struct":
            values[f.name] = sample(getattr(cls, camel(f.name)), version)
        elif f.type.startswith("[]"):
            values[f.name] = [SAMPLES[f.type[2:]]]
        else:
            values[f.name] = SAMPLES[f.type]
    return cls(**values)


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
def test_every_version_round_trips(api: Api):
    classes = dict(zip((REQUEST, RESPONSE), message_classes(api), strict=True))
    for version in range(api.version_range.low, api.version_range.high + 1):
        for direction, cls in classes.items():
            for message in (cls(), sample(cls, version)):
                data = bytes(encode_body(api, version, direction, message))
                decoded, end = decode_body(api, version, direction, data)
                assert end == len(data), (version, direction)
                assert decoded == message, (version, direction)
