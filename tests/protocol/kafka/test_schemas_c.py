"""Declarations of group C APIs against facts checked in Kafka's message definitions."""

import importlib

import pytest

from protocol.kafka import decode_body, decode_request, decode_response, encode_body, encode_request, encode_response
from protocol.kafka.message_classes import camel, message_classes
from protocol.kafka.schema import Field

# module, key, name, versions, flexible: 0 up to the newest version of Kafka 4.1.
APIS = [
    ("heartbeat", 12, "Heartbeat", "0-4", "4+"),
    ("sasl_handshake", 17, "SaslHandshake", "0-1", "none"),
    ("alter_configs", 33, "AlterConfigs", "0-2", "2+"),
    ("sasl_authenticate", 36, "SaslAuthenticate", "0-2", "2+"),
    ("create_partitions", 37, "CreatePartitions", "0-3", "2+"),
    ("delete_groups", 42, "DeleteGroups", "0-2", "2+"),
    ("incremental_alter_configs", 44, "IncrementalAlterConfigs", "0-1", "1+"),
    ("offset_delete", 47, "OffsetDelete", "0", "none"),
    ("describe_cluster", 60, "DescribeCluster", "0-2", "0+"),
    ("describe_producers", 61, "DescribeProducers", "0", "0+"),
    ("describe_transactions", 65, "DescribeTransactions", "0", "0+"),
    ("list_transactions", 66, "ListTransactions", "0-2", "0+"),
    ("consumer_group_heartbeat", 68, "ConsumerGroupHeartbeat", "0-1", "0+"),
    ("consumer_group_describe", 69, "ConsumerGroupDescribe", "0-1", "0+"),
    ("get_telemetry_subscriptions", 71, "GetTelemetrySubscriptions", "0", "0+"),
    ("describe_topic_partitions", 75, "DescribeTopicPartitions", "0", "0+"),
    ("alter_replica_log_dirs", 34, "AlterReplicaLogDirs", "0-2", "2+"),
    ("alter_partition_reassignments", 45, "AlterPartitionReassignments", "0-1", "0+"),
    ("list_partition_reassignments", 46, "ListPartitionReassignments", "0", "0+"),
    ("describe_quorum", 55, "DescribeQuorum", "0-2", "0+"),
    ("describe_user_scram_credentials", 50, "DescribeUserScramCredentials", "0", "0+"),
    ("alter_user_scram_credentials", 51, "AlterUserScramCredentials", "0", "0+"),
    ("push_telemetry", 72, "PushTelemetry", "0", "0+"),
    ("create_delegation_token", 38, "CreateDelegationToken", "0-3", "2+"),
    ("renew_delegation_token", 39, "RenewDelegationToken", "0-2", "2+"),
    ("expire_delegation_token", 40, "ExpireDelegationToken", "0-2", "2+"),
    ("describe_delegation_token", 41, "DescribeDelegationToken", "0-3", "2+"),
    ("list_config_resources", 74, "ListConfigResources", "0-1", "0+"),
    ("update_features", 57, "UpdateFeatures", "0-2", "0+"),
]


def api(module):
    return importlib.import_module(f"protocol.kafka.apis.{module}").API


def field(fields, path) -> Field:
    """The field at a dotted path, e.g. "groups.members.member_type"."""
    head, _, rest = path.partition(".")
    (found,) = [f for f in fields if f.name == head]
    return field(found.fields, rest) if rest else found


def names(fields):
    return [f.name for f in fields]


@pytest.mark.parametrize("module,key,name,versions,flexible", APIS)
def test_identity_and_ranges(module, key, name, versions, flexible):
    declared = api(module)
    assert (declared.key, declared.name, declared.versions, declared.flexible) == (
        key, name, versions, flexible,
    )
    assert declared.version_range.low == 0


def test_heartbeat():
    declared = api("heartbeat")
    instance = field(declared.request, "group_instance_id")
    assert (instance.versions, instance.nullable, instance.default) == ("3+", "3+", None)
    throttle = field(declared.response, "throttle_time_ms")
    assert throttle.versions == "1+" and throttle.ignorable
    assert declared.request_header_version(3) == 1
    assert declared.response_header_version(4) == 1


def test_sasl():
    handshake = api("sasl_handshake")
    assert names(handshake.request) == ["mechanism"]
    assert field(handshake.response, "mechanisms").type == "[]string"
    authenticate = api("sasl_authenticate")
    assert names(authenticate.response) == [
        "error_code", "error_message", "auth_bytes", "session_lifetime_ms",
    ]
    lifetime = field(authenticate.response, "session_lifetime_ms")
    assert (lifetime.type, lifetime.versions, lifetime.default) == ("int64", "1+", 0)
    assert field(authenticate.response, "error_message").nullable == "0+"


def test_config_apis():
    alter = api("alter_configs")
    value = field(alter.request, "resources.configs.value")
    assert value.nullable == "0+"
    assert field(alter.request, "resources.resource_type").type == "int8"
    assert names(alter.response) == ["throttle_time_ms", "responses"]
    incremental = api("incremental_alter_configs")
    assert names(field(incremental.request, "resources.configs").fields) == [
        "name", "config_operation", "value",
    ]
    assert field(incremental.request, "resources.configs.config_operation").map_key
    assert names(incremental.response) == ["throttle_time_ms", "responses"]


def test_create_partitions():
    declared = api("create_partitions")
    assignments = field(declared.request, "topics.assignments")
    assert (assignments.type, assignments.nullable) == ("[]", "0+")
    assert field(declared.request, "topics.assignments.broker_ids").type == "[]int32"
    message = field(declared.response, "results.error_message")
    assert (message.nullable, message.default) == ("0+", None)


def test_group_admin_apis():
    delete = api("delete_groups")
    assert field(delete.request, "groups_names").type == "[]string"
    # Kafka trunk's per-group error_message (v3) came after 4.1.
    assert names(field(delete.response, "results").fields) == ["group_id", "error_code"]
    offset_delete = api("offset_delete")
    assert names(offset_delete.response) == ["error_code", "throttle_time_ms", "topics"]
    assert field(offset_delete.response, "topics.partitions.partition_index").map_key


def test_describe_cluster():
    declared = api("describe_cluster")
    assert names(declared.request) == [
        "include_cluster_authorized_operations", "endpoint_type", "include_fenced_brokers",
    ]
    assert field(declared.request, "endpoint_type").default == 1
    assert field(declared.request, "include_fenced_brokers").versions == "2+"
    assert field(declared.response, "endpoint_type").versions == "1+"
    assert field(declared.response, "controller_id").default == -1
    assert field(declared.response, "brokers.is_fenced").versions == "2+"
    assert field(declared.response, "cluster_authorized_operations").default == -(2**31)


def test_transaction_admin_apis():
    producers = api("describe_producers")
    active = field(producers.response, "topics.partitions.active_producers")
    assert names(active.fields) == [
        "producer_id", "producer_epoch", "last_sequence", "last_timestamp",
        "coordinator_epoch", "current_txn_start_offset",
    ]
    assert field(active.fields, "producer_epoch").type == "int32"
    assert field(active.fields, "current_txn_start_offset").default == -1
    describe = api("describe_transactions")
    assert field(describe.response, "transaction_states.producer_epoch").type == "int16"
    assert names(field(describe.response, "transaction_states.topics").fields) == [
        "topic", "partitions",
    ]
    listing = api("list_transactions")
    assert field(listing.request, "duration_filter").default == -1
    pattern = field(listing.request, "transactional_id_pattern")
    assert (pattern.versions, pattern.nullable, pattern.default) == ("2+", "2+", None)
    assert names(listing.response) == [
        "throttle_time_ms", "error_code", "unknown_state_filters", "transaction_states",
    ]


def test_consumer_group_heartbeat():
    declared = api("consumer_group_heartbeat")
    regex = field(declared.request, "subscribed_topic_regex")
    assert (regex.versions, regex.nullable) == ("1+", "1+")
    assert field(declared.request, "rebalance_timeout_ms").default == -1
    owned = field(declared.request, "topic_partitions")
    assert (owned.nullable, owned.default) == ("0+", None)
    assignment = field(declared.response, "assignment")
    assert (assignment.type, assignment.nullable, assignment.default) == ("struct", "0+", None)
    assert names(field(assignment.fields, "topic_partitions").fields) == ["topic_id", "partitions"]
    # GroupCreationTimeMs (v2, KIP-1327) is newer than 4.1.
    assert "group_creation_time_ms" not in names(declared.response)


def test_consumer_group_describe():
    declared = api("consumer_group_describe")
    member = field(declared.response, "groups.members")
    member_type = field(member.fields, "member_type")
    assert (member_type.type, member_type.versions, member_type.default) == ("int8", "1+", -1)
    target = field(member.fields, "target_assignment")
    assert target.type == "struct"
    assert names(field(target.fields, "topic_partitions").fields) == [
        "topic_id", "topic_name", "partitions",
    ]
    assert field(declared.response, "groups.authorized_operations").default == -(2**31)


def test_get_telemetry_subscriptions():
    declared = api("get_telemetry_subscriptions")
    assert field(declared.request, "client_instance_id").type == "uuid"
    assert field(declared.response, "accepted_compression_types").type == "[]int8"
    assert names(declared.response)[-2:] == ["delta_temporality", "requested_metrics"]


def test_list_config_resources():
    """v0 is Kafka 4.0's ListClientMetricsResources (names only, of client-metrics subscriptions); v1
    (Kafka 4.1) asks for types and answers each resource's type, 16 (CLIENT_METRICS) where absent."""
    declared = api("list_config_resources")
    assert (field(declared.request, "resource_types").type, field(declared.request, "resource_types").versions) == (
        "[]int8", "1+")
    assert names(declared.response) == ["throttle_time_ms", "error_code", "config_resources"]
    resource_type = field(declared.response, "config_resources.resource_type")
    assert (resource_type.type, resource_type.versions, resource_type.default) == ("int8", "1+", 16)
    Resource = declared.Response.ConfigResources
    answer = declared.Response(config_resources=[Resource(resource_name="g", resource_type=32)])
    # Flexible from v0: throttle, error, compact array of one, compact string "g", (v1: type 32), tags.
    body = b"\x00\x00\x00\x00" + b"\x00\x00" + b"\x02" + b"\x02g"
    assert encode_response(74, 0, 1, answer)[4:] == b"\x00" + body + b"\x00\x00"
    assert encode_response(74, 1, 1, answer)[4:] == b"\x00" + body + b"\x20\x00\x00"
    assert decode_response(74, 0, encode_response(74, 0, 1, answer))[1].config_resources[0].resource_type == 16


def test_reassignment_apis():
    alter, listed = api("alter_partition_reassignments"), api("list_partition_reassignments")
    replicas = field(alter.request, "topics.partitions.replicas")
    assert (replicas.nullable, replicas.default) == ("0+", None)
    assert field(alter.request, "allow_replication_factor_change").versions == "1+"
    assert field(listed.request, "topics").nullable == "0+"
    assert names(field(listed.response, "topics.partitions").fields) == [
        "partition_index", "replicas", "adding_replicas", "removing_replicas"]


def test_describe_quorum_and_push_telemetry():
    quorum = api("describe_quorum")
    assert field(quorum.response, "topics.partitions.current_voters.replica_directory_id").versions == "2+"
    assert field(quorum.response, "nodes.listeners.port").type == "uint16"
    assert names(api("push_telemetry").request) == [
        "client_instance_id", "subscription_id", "terminating", "compression_type", "metrics"]


def test_describe_topic_partitions():
    declared = api("describe_topic_partitions")
    assert field(declared.request, "response_partition_limit").default == 2000
    cursor = field(declared.request, "cursor")
    assert (cursor.type, cursor.nullable, cursor.default) == ("struct", "0+", None)
    assert field(declared.response, "topics.name").nullable == "0+"
    elr = field(declared.response, "topics.partitions.eligible_leader_replicas")
    assert (elr.type, elr.nullable, elr.default) == ("[]int32", "0+", None)
    assert field(declared.response, "next_cursor").nullable == "0+"
    assert field(declared.response, "topics.partitions.leader_epoch").default == -1


def test_ranges_are_consistent():
    """Every field lives in some version of its API and is nullable only where it exists."""

    def check(fields, api_range):
        for f in fields:
            assert f.version_range.low <= api_range.high, f.name
            nullable = f.nullable_range
            if nullable:
                assert f.version_range.low <= nullable.low, f.name
            if f.default is None:
                assert nullable, f.name
            check(f.fields, api_range)

    for module, *_ in APIS:
        declared = api(module)
        check(declared.request, declared.version_range)
        check(declared.response, declared.version_range)


def filled(cls, version: int):
    """An instance whose every list of structs in `version` holds one element and every struct is set."""
    values = {}
    for f in cls._fields:
        if version not in f.version_range:
            continue
        if f.type == "[]":
            values[f.name] = [filled(getattr(cls, camel(f.name)), version)]
        elif f.type == "struct":
            values[f.name] = filled(getattr(cls, camel(f.name)), version)
    return cls(**values)


@pytest.mark.parametrize("module", [m for m, *_ in APIS])
def test_round_trip_every_version(module):
    declared = api(module)
    request_cls, response_cls = message_classes(declared)
    for version in range(declared.version_range.low, declared.version_range.high + 1):
        for body in (request_cls(), filled(request_cls, version)):
            frame = encode_request(declared.key, version, 7, "client", body)
            header, decoded = decode_request(frame)
            assert (header.api_key, header.api_version) == (declared.key, version)
            assert encode_request(declared.key, version, 7, "client", decoded) == frame
        for body in (response_cls(), filled(response_cls, version)):
            frame = encode_response(declared.key, version, 7, body)
            correlation_id, decoded = decode_response(declared.key, version, frame)
            assert correlation_id == 7
            assert encode_response(declared.key, version, 7, decoded) == frame
        assert decode_response(declared.key, version, encode_response(
            declared.key, version, 7, response_cls()))[1] == response_cls()


def test_scram_credential_apis():
    describe = api("describe_user_scram_credentials")
    assert field(describe.request, "users").nullable == "0+"
    assert names(field(describe.response, "results").fields) == [
        "user", "error_code", "error_message", "credential_infos",
    ]
    assert names(field(describe.response, "results.credential_infos").fields) == ["mechanism", "iterations"]
    alter = api("alter_user_scram_credentials")
    assert names(alter.request) == ["deletions", "upsertions"]
    assert names(field(alter.request, "upsertions").fields) == [
        "name", "mechanism", "iterations", "salt", "salted_password",
    ]
    assert field(alter.request, "upsertions.mechanism").type == "int8"
    assert names(field(alter.response, "results").fields) == ["user", "error_code", "error_message"]


def test_delegation_token_apis():
    create = api("create_delegation_token")
    assert names(create.request) == ["owner_principal_type", "owner_principal_name", "renewers", "max_lifetime_ms"]
    assert field(create.request, "owner_principal_name").nullable == "3+"
    assert names(create.response)[-1] == "throttle_time_ms"
    assert field(create.response, "token_requester_principal_name").versions == "3+"
    for module, period in (("renew_delegation_token", "renew_period_ms"),
                           ("expire_delegation_token", "expiry_time_period_ms")):
        declared = api(module)
        assert names(declared.request) == ["hmac", period]
        assert names(declared.response) == ["error_code", "expiry_timestamp_ms", "throttle_time_ms"]
    describe = api("describe_delegation_token")
    assert field(describe.request, "owners").nullable == "0+"
    assert names(field(describe.response, "tokens").fields) == [
        "principal_type", "principal_name", "token_requester_principal_type", "token_requester_principal_name",
        "issue_timestamp", "expiry_timestamp", "max_timestamp", "token_id", "hmac", "renewers",
    ]


def test_update_features():
    declared = api("update_features")
    assert names(declared.request) == ["timeout_ms", "feature_updates", "validate_only"]
    assert names(field(declared.request, "feature_updates").fields) == [
        "feature", "max_version_level", "allow_downgrade", "upgrade_type",
    ]
    assert field(declared.request, "feature_updates.allow_downgrade").versions == "0"
    assert field(declared.response, "results").versions == "0-1"
    # v1 as Kafka writes it: a safe downgrade of group.version to 0, validated only
    wire = (bytes.fromhex("0000ea60" "02" "0e") + b"group.version" + bytes.fromhex("0000" "02" "00" "01" "00"))
    body = decode_body(declared, 1, "request", wire)[0]
    (update,) = body.feature_updates
    assert (body.timeout_ms, update.feature, update.max_version_level, update.upgrade_type, body.validate_only) == (
        60000, "group.version", 0, 2, True)
    assert encode_body(declared, 1, "request", body) == wire
    # v2 answers without the per-feature results
    assert encode_body(declared, 2, "response", declared.Response()) == bytes.fromhex("00000000" "0000" "00" "00")


def test_api_versions_features_are_tagged_and_left_out_at_their_defaults():
    declared = importlib.import_module("protocol.kafka.apis.api_versions").API
    bare = encode_body(declared, 3, "response", declared.Response())
    assert bare == bytes.fromhex("0000" "01" "00000000" "00")  # no tagged field: none differs from its default
    with_features = declared.Response(
        supported_features=[declared.Response.SupportedFeatures(name="metadata.version", min_version=25,
                                                                max_version=25)],
        finalized_features_epoch=0)
    wire = encode_body(declared, 3, "response", with_features)
    assert wire[len(bare) - 1] == 2  # two tagged fields: supported features (tag 0), the epoch (tag 1)
    assert decode_body(declared, 3, "response", wire)[0] == with_features
