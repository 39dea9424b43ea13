"""Declarations of APIs 19-32 match Kafka's message definitions."""

import importlib

import pytest

from protocol.kafka import decode_request, decode_response, encode_request, encode_response
from protocol.kafka.message_classes import camel, message_classes
from protocol.kafka.schema import NO_DEFAULT, OPEN_END

# module, key, name, versions, flexible
DECLARED = [
    ("create_topics", 19, "CreateTopics", "0-7", "5+"),
    ("delete_topics", 20, "DeleteTopics", "0-6", "4+"),
    ("delete_records", 21, "DeleteRecords", "0-2", "2+"),
    ("init_producer_id", 22, "InitProducerId", "0-6", "2+"),
    ("offset_for_leader_epoch", 23, "OffsetForLeaderEpoch", "0-4", "4+"),
    ("add_partitions_to_txn", 24, "AddPartitionsToTxn", "0-5", "3+"),
    ("add_offsets_to_txn", 25, "AddOffsetsToTxn", "0-4", "3+"),
    ("end_txn", 26, "EndTxn", "0-5", "3+"),
    ("write_txn_markers", 27, "WriteTxnMarkers", "0-1", "1+"),
    ("txn_offset_commit", 28, "TxnOffsetCommit", "0-5", "3+"),
    ("describe_acls", 29, "DescribeAcls", "0-3", "2+"),
    ("create_acls", 30, "CreateAcls", "0-3", "2+"),
    ("delete_acls", 31, "DeleteAcls", "0-3", "2+"),
    ("describe_configs", 32, "DescribeConfigs", "0-4", "4+"),
]


def api(module):
    return importlib.import_module(f"protocol.kafka.apis.{module}").API


def field(fields, path):
    """The field at a dotted path such as "topics.configs.value"."""
    head, _, rest = path.partition(".")
    (found,) = [f for f in fields if f.name == head]
    return field(found.fields, rest) if rest else found


@pytest.mark.parametrize(("module", "key", "name", "versions", "flexible"), DECLARED)
def test_identity_and_ranges(module, key, name, versions, flexible):
    declared = api(module)
    assert (declared.key, declared.name, declared.versions, declared.flexible) == (
        key, name, versions, flexible,
    )
    assert declared.version_range.low == 0


@pytest.mark.parametrize("module", [row[0] for row in DECLARED])
def test_no_field_outlives_the_api_or_is_tagged_outside_flexible_versions(module):
    declared = api(module)
    flexible = declared.flexible_range

    def check(fields):
        for f in fields:
            versions = f.version_range
            assert versions.low <= declared.version_range.high, f.name
            assert versions.high == OPEN_END or versions.high < declared.version_range.high, f.name
            if f.tag is not None:
                assert f.tagged_range.low >= flexible.low, f.name
            check(f.fields)

    check(declared.request)
    check(declared.response)


def test_create_topics_facts():
    declared = api("create_topics")
    assert field(declared.request, "timeout_ms").default == 60000
    assert field(declared.request, "validate_only").versions == "1+"
    assert field(declared.request, "topics.configs.value").nullable == "0+"
    config_error = field(declared.response, "topics.topic_config_error_code")
    assert (config_error.tag, config_error.tagged) == (0, "5+")
    assert field(declared.response, "topics.topic_id").type == "uuid"
    assert field(declared.response, "topics.topic_id").versions == "7+"
    assert field(declared.response, "topics.configs").nullable == "5+"
    assert field(declared.response, "topics.configs.config_source").default == -1


def test_delete_topics_facts():
    declared = api("delete_topics")
    assert field(declared.request, "topic_names").versions == "0-5"
    assert field(declared.request, "topics").versions == "6+"
    assert field(declared.request, "topics.name").default is None
    assert field(declared.response, "responses.name").nullable == "6+"
    assert field(declared.response, "responses.error_message").versions == "5+"


def test_init_producer_id_facts():
    declared = api("init_producer_id")
    assert field(declared.request, "transactional_id").nullable == "0+"
    assert field(declared.request, "producer_id").default == -1
    assert field(declared.request, "enable2_pc").versions == "6+"
    assert field(declared.response, "producer_id").default == -1
    assert field(declared.response, "ongoing_txn_producer_epoch").default == -1


def test_offset_for_leader_epoch_facts():
    declared = api("offset_for_leader_epoch")
    assert field(declared.request, "replica_id").default == -2
    assert field(declared.request, "topics.partitions.current_leader_epoch").versions == "2+"
    assert field(declared.response, "throttle_time_ms").versions == "2+"
    assert field(declared.response, "topics.partitions.leader_epoch").versions == "1+"
    assert field(declared.response, "topics.partitions.end_offset").default == -1


def test_add_partitions_to_txn_has_both_shapes():
    declared = api("add_partitions_to_txn")
    by_version = {f.name: f.versions for f in declared.request}
    assert by_version == {
        "transactions": "4+",
        "v3_and_below_transactional_id": "0-3",
        "v3_and_below_producer_id": "0-3",
        "v3_and_below_producer_epoch": "0-3",
        "v3_and_below_topics": "0-3",
    }
    assert field(declared.request, "transactions.verify_only").default is False
    assert field(declared.request, "transactions.topics.partitions").type == "[]int32"
    assert field(declared.response, "error_code").versions == "4+"
    assert field(declared.response, "results_by_topic_v3_and_below").versions == "0-3"
    nested = field(declared.response, "results_by_transaction.topic_results.results_by_partition")
    flat = field(declared.response, "results_by_topic_v3_and_below.results_by_partition")
    assert nested.fields == flat.fields


def test_transaction_end_facts():
    end_txn = api("end_txn")
    assert [f.name for f in end_txn.request] == [
        "transactional_id", "producer_id", "producer_epoch", "committed",
    ]
    assert field(end_txn.response, "producer_epoch").versions == "5+"
    assert field(end_txn.response, "producer_id").default == -1
    markers = api("write_txn_markers")
    assert field(markers.request, "markers.coordinator_epoch").type == "int32"
    assert field(markers.request, "markers.topics.partition_indexes").type == "[]int32"


def test_txn_offset_commit_facts():
    declared = api("txn_offset_commit")
    assert field(declared.request, "generation_id").default == -1
    assert field(declared.request, "member_id").default == ""
    assert field(declared.request, "group_instance_id").default is None
    assert field(declared.request, "topics.partitions.committed_leader_epoch").versions == "2+"
    assert field(declared.request, "topics.partitions.committed_metadata").nullable == "0+"


def test_acl_pattern_types_default_to_literal():
    literal = 3
    assert field(api("describe_acls").request, "pattern_type_filter").default == literal
    assert field(api("describe_acls").response, "resources.pattern_type").default == literal
    assert field(api("create_acls").request, "creations.resource_pattern_type").default == literal
    assert field(api("delete_acls").request, "filters.pattern_type_filter").default == literal
    assert field(api("delete_acls").response, "filter_results.matching_acls.pattern_type").versions == "1+"


def test_describe_configs_facts():
    declared = api("describe_configs")
    assert field(declared.request, "resources.configuration_keys").nullable == "0+"
    assert field(declared.request, "include_documentation").versions == "3+"
    assert field(declared.response, "results.configs.is_default").versions == "0"
    assert field(declared.response, "results.configs.synonyms").versions == "1+"
    assert field(declared.response, "results.configs.config_type").default == 0
    assert field(declared.response, "results.configs.documentation").default is NO_DEFAULT


def one_of_each(cls, version):
    """A default message whose struct arrays present at `version` hold one default element."""
    message = cls()
    for f in cls._fields:
        if f.type == "[]" and version in f.version_range:
            setattr(message, f.name, [one_of_each(getattr(cls, camel(f.name)), version)])
    return message


@pytest.mark.parametrize("module", [row[0] for row in DECLARED])
def test_every_version_round_trips(module):
    declared = api(module)
    request_class, response_class = message_classes(declared)
    for version in range(declared.version_range.low, declared.version_range.high + 1):
        for request in (request_class(), one_of_each(request_class, version)):
            frame = encode_request(declared.key, version, 7, "client", request)
            header, decoded = decode_request(frame)
            assert (header.api_version, header.correlation_id) == (version, 7)
            assert decoded == request, version
        for response in (response_class(), one_of_each(response_class, version)):
            frame = encode_response(declared.key, version, 7, response)
            assert decode_response(declared.key, version, frame) == (7, response), version
