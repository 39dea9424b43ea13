"""Feature flags (KIP-584) through the real gateway: kafka-python's describe_features and update_features
(ApiVersions and UpdateFeatures), raw requests for what a client does not show, group.version gating the
consumer protocol, the levels kept through a restart, and ALTER on the cluster asked for a change."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from kafka import errors as kafka_errors
from kafka.admin import KafkaAdminClient, UpdateFeatureType

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acls import ANONYMOUS, STANDARD, create_acls
from tests.gateway.test_admin_apis import exchange
from tests.gateway.test_cluster import gateway_cluster

NEW_CLUSTER = {"metadata.version": {"supported": (25, 25), "finalized": (25, 25), "finalized_epoch": 0},
               "group.version": {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": 0}}
FAILED_ALL = "The update failed for all features since the following feature had an error: "


def heartbeat_error(gateway) -> int:
    api = by_name("ConsumerGroupHeartbeat")
    return exchange(gateway, "ConsumerGroupHeartbeat", 0, api.Request(
        group_id="features-group", member_id="", member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=["features-topic"], topic_partitions=[])).error_code


def refusal(client: KafkaAdminClient, updates: dict) -> str:
    with pytest.raises(kafka_errors.InvalidUpdateVersionError) as refused:
        client.update_features(updates)
    return str(refused.value)


def test_features_described_updated_and_kept(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        assert client.describe_features() == NEW_CLUSTER
        assert heartbeat_error(server) == ErrorCode.NONE
        assert "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature " \
               "without setting the upgrade type to either safe or unsafe downgrade." in refusal(
            client, {"group.version": 0})

        assert client.update_features({"group.version": (UpdateFeatureType.SAFE_DOWNGRADE, 0)}) == {
            "group.version": "OK"}
        described = client.describe_features()
        assert described["group.version"] == {"supported": (0, 1)}  # level 0: no longer finalized
        assert described["metadata.version"]["finalized_epoch"] == 1
        assert heartbeat_error(server) == ErrorCode.UNSUPPORTED_VERSION
        describe = by_name("ConsumerGroupDescribe")
        (group,) = exchange(server, "ConsumerGroupDescribe", 1,
                            describe.Request(group_ids=["features-group"])).groups
        assert (group.group_id, group.error_code) == ("features-group", ErrorCode.UNSUPPORTED_VERSION)

        assert FAILED_ALL + ("Invalid update version 2 for feature transaction.version. "
                             "Local controller 0 does not support this feature.") in refusal(
            client, {"transaction.version": 2})
        assert FAILED_ALL + ("Invalid update version 2 for feature group.version. "
                             "Local controller 0 only supports versions 0-1") in refusal(client, {"group.version": 2})
        assert "Invalid update version 24 for feature metadata.version. Local controller 0 only supports " \
               "versions 25" in refusal(client, {"metadata.version": (UpdateFeatureType.SAFE_DOWNGRADE, 24)})
        assert "Can't downgrade to a newer version." in refusal(
            client, {"group.version": (UpdateFeatureType.SAFE_DOWNGRADE, 1)})
        assert client.update_features({"group.version": 1}, validate_only=True) == {"group.version": "OK"}
        assert client.describe_features()["metadata.version"]["finalized_epoch"] == 1  # nothing changed
    finally:
        client.close()
        server.stop()

    server = GatewayProcess(tmp_path / "gateway").start()  # the levels and their epoch outlive a restart
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        assert client.describe_features()["group.version"] == {"supported": (0, 1)}
        assert heartbeat_error(server) == ErrorCode.UNSUPPORTED_VERSION
        assert client.update_features({"group.version": 1}) == {"group.version": "OK"}
        assert client.describe_features()["group.version"] == {"supported": (0, 1), "finalized": (1, 1),
                                                               "finalized_epoch": 2}
        assert heartbeat_error(server) == ErrorCode.NONE
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_leaves_out_ranges_from_0_below_v4(shared_gateway, version):
    """Clients older than ApiVersions v4 refuse a supported range that starts at 0 (KAFKA-17011);
    the finalized levels go to every version from 3, defaults left out."""
    api = by_name("ApiVersions")
    answer = exchange(shared_gateway, "ApiVersions", version, api.Request(client_software_name="raw",
                                                                          client_software_version="1"))
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    assert supported == ({"metadata.version": (25, 25)} if version < 4 else
                         {"metadata.version": (25, 25), "group.version": (0, 1)})
    assert {f.name: (f.min_version_level, f.max_version_level) for f in answer.finalized_features} == {
        "metadata.version": (25, 25), "group.version": (1, 1)}
    assert answer.finalized_features_epoch >= 0


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_answers_per_version(shared_gateway, version):
    """v0 and v1 name each feature's outcome, with Kafka's "NONE" for a message; v2 names none."""
    api = by_name("UpdateFeatures")
    same = api.Request(feature_updates=[api.Request.FeatureUpdates(feature="group.version", max_version_level=1)])
    answer = exchange(shared_gateway, "UpdateFeatures", version, same)
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, None)
    outcomes = [(r.feature, r.error_code, r.error_message) for r in answer.results]
    assert outcomes == ([] if version == 2 else [("group.version", ErrorCode.NONE, "NONE")])
    unknown = api.Request(feature_updates=[api.Request.FeatureUpdates(feature="no.such.feature", max_version_level=0)])
    refused = exchange(shared_gateway, "UpdateFeatures", version, unknown)
    assert (refused.error_code, refused.error_message, refused.results) == (
        ErrorCode.INVALID_UPDATE_VERSION,
        FAILED_ALL + "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not found.", [])


def test_update_features_needs_alter_on_the_cluster(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--authorizer-class-name", STANDARD,
                            "--allow-everyone-if-no-acl-found", "true").start()
    client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        create_acls(server, AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANONYMOUS,
                                       "*", AclOperation.ALTER, AclPermissionType.DENY))
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            client.update_features({"group.version": (UpdateFeatureType.SAFE_DOWNGRADE, 0)})
        assert client.describe_features() == NEW_CLUSTER  # ApiVersions asks for nothing
    finally:
        client.close()
        server.stop()


def test_a_cluster_finalizes_through_its_controller(tmp_path):
    """A change sent to a gateway that is not the controller is forwarded to it and checked there (its refusals
    name the controller, node 1); every gateway reports the levels and epoch the controller shares."""
    with gateway_cluster(tmp_path, 2) as (first, second):
        client = KafkaAdminClient(bootstrap_servers=second.bootstrap)
        try:
            assert "Local controller 1 only supports versions 0-1" in refusal(client, {"group.version": 3})
            assert client.update_features({"group.version": (UpdateFeatureType.SAFE_DOWNGRADE, 0)}) == {
                "group.version": "OK"}
        finally:
            client.close()

        def finalized(gateway) -> tuple[dict, int]:
            api = by_name("ApiVersions")
            answer = exchange(gateway, "ApiVersions", 4, api.Request())
            return {f.name: f.max_version_level for f in answer.finalized_features}, answer.finalized_features_epoch

        for gateway in (first, second):
            wait_until(lambda: finalized(gateway) == ({"metadata.version": 25}, 1), 10,  # noqa: B023
                       "the controller's levels everywhere")
            assert heartbeat_error(gateway) == ErrorCode.UNSUPPORTED_VERSION
