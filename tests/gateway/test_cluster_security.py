"""ACLs, SCRAM credentials and delegation tokens in a cluster of gateways (issue 17): whatever gateway a change is
sent to, the controller journals it and every gateway authorizes and authenticates by it; a new
controller serves what it replayed.

The changes, and the DescribeAcls that tells whether a gateway applied them, go to a chosen gateway
over a raw connection (the admin clients send them to the controller by themselves); the real
clients then check every gateway."""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.clients import TIMEOUT_S
from tests.gateway.groups import wait_until
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import MECHANISM_TYPES, client_config, log_lines, with_sasl_listener
from tests.gateway.test_acls import ANONYMOUS, STANDARD, unique
from tests.gateway.test_cluster import PARTITIONS, create_topic_through, gateway_cluster, metadata, spread_over
from tests.gateway.token_calls import SECRET, create, renew, signed_in, token_session
from tests.protocol.sasl.scram_client import ScramClient

CREATE, DELETE, DESCRIBE = by_name("CreateAcls"), by_name("DeleteAcls"), by_name("DescribeAcls")
ALTER = by_name("AlterUserScramCredentials")
MECHANISM = "SCRAM-SHA-512"
USER, PASSWORD = "cleo", "cleo-secret-512"
OPEN_AUTHORIZER = ("--authorizer-class-name", STANDARD, "--allow-everyone-if-no-acl-found", "true")
# DENY WRITE to ANONYMOUS, and DESCRIBE to everyone (an ACL on a topic closes it to all it does not allow)
DENIED = {(ANONYMOUS, AclOperation.WRITE, AclPermissionType.DENY),
          ("User:*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)}


def secured_gateways(tmp_path):
    """Three gateways with an authorizer that lets everyone do what no ACL speaks of, each with a
    SASL_PLAINTEXT listener beside its PLAINTEXT one, delegation tokens on."""
    return gateway_cluster(tmp_path, 3, *OPEN_AUTHORIZER, *SECRET, prepare=with_sasl_listener)


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    with secured_gateways(tmp_path_factory.mktemp("cluster")) as gateways:
        yield gateways


def call(gateway, api, version: int, request):
    connection = RawConnection(gateway.port)
    try:
        return connection.call(api, version, request)
    finally:
        connection.close()


def create_acls_through(gateway, topic: str, acls: set[tuple[str, AclOperation, AclPermissionType]]) -> None:
    creation = CREATE.Request.Creations
    answer = call(gateway, CREATE, 2, CREATE.Request(creations=[
        creation(resource_type=ResourceType.TOPIC.value, resource_name=topic,
                 resource_pattern_type=ResourcePatternType.LITERAL.value, principal=principal, host="*",
                 operation=operation.value, permission_type=permission.value)
        for principal, operation, permission in sorted(acls, key=str)]))
    assert [result.error_code for result in answer.results] == [ErrorCode.NONE] * len(acls)


def delete_topic_acls_through(gateway, topic: str) -> set[tuple[str, AclOperation, AclPermissionType]]:
    """What a deletion of every ACL on `topic` sent to `gateway` matched."""
    answer = call(gateway, DELETE, 2, DELETE.Request(filters=[DELETE.Request.Filters(
        resource_type_filter=ResourceType.TOPIC.value, resource_name_filter=topic,
        pattern_type_filter=ResourcePatternType.LITERAL.value, principal_filter=None, host_filter=None,
        operation=AclOperation.ANY.value, permission_type=AclPermissionType.ANY.value)]))
    [result] = answer.filter_results
    assert result.error_code == ErrorCode.NONE
    return {(m.principal, AclOperation(m.operation), AclPermissionType(m.permission_type))
            for m in result.matching_acls}


def create_scram_user_through(gateway, user: str, password: str) -> None:
    salt, iterations = os.urandom(16), 4096
    upsertion = ALTER.Request.Upsertions(
        name=user, mechanism=MECHANISM_TYPES[MECHANISM].value, iterations=iterations, salt=salt,
        salted_password=SCRAM[MECHANISM].salted_password(password, salt, iterations))
    answer = call(gateway, ALTER, 0, ALTER.Request(deletions=[], upsertions=[upsertion]))
    assert [(result.user, result.error_code) for result in answer.results] == [(user, ErrorCode.NONE)]


def topic_acls(gateway, topic: str) -> set[tuple[str, AclOperation, AclPermissionType]]:
    """The ACLs on `topic` that `gateway` itself authorizes by: DescribeAcls over a raw connection to it (an
    admin client would ask the controller whatever gateway it was given)."""
    answer = call(gateway, DESCRIBE, 2, DESCRIBE.Request(
        resource_type_filter=ResourceType.TOPIC.value, resource_name_filter=topic,
        pattern_type_filter=ResourcePatternType.LITERAL.value, principal_filter=None, host_filter=None,
        operation=AclOperation.ANY.value, permission_type=AclPermissionType.ANY.value))
    assert answer.error_code == ErrorCode.NONE
    return {(acl.principal, AclOperation(acl.operation), AclPermissionType(acl.permission_type))
            for resource in answer.resources for acl in resource.acls}


def produce_errors(gateway, topic: str) -> list:
    """The error of one record produced to each partition, bootstrapped at `gateway` (None where it was
    written). One producer per partition: a TOPIC_AUTHORIZATION_FAILED answer makes librdkafka drop the
    topic's partitions, failing the records it still holds for the others with a local error (-190, -197)."""
    reports, producers = {}, []
    for partition in range(PARTITIONS):
        producer = Producer({"bootstrap.servers": gateway.bootstrap, "message.timeout.ms": 20000})
        producer.produce(topic, b"x", partition=partition,
                         on_delivery=lambda err, msg, n=partition: reports.__setitem__(n, err))
        producers.append(producer)
    for producer in producers:
        assert producer.flush(TIMEOUT_S) == 0
    return [None if reports[n] is None else reports[n].code() for n in range(PARTITIONS)]


def test_an_acl_sent_to_a_follower_is_enforced_and_lifted_by_every_gateway(secured_cluster):
    controller, first, second = secured_cluster
    topic = unique("denied")
    create_topic_through(controller, topic)
    wait_until(lambda: spread_over(controller, topic, {1, 2, 3}), TIMEOUT_S, "every gateway leads a partition")
    create_acls_through(first, topic, DENIED)
    assert topic_acls(first, topic) == DENIED  # the gateway it went through, at once
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: topic_acls(g, topic) == DENIED, TIMEOUT_S, "every gateway applied the ACLs")
    for gateway in secured_cluster:  # each gateway leads some partitions: each refuses
        assert produce_errors(gateway, topic) == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * PARTITIONS

    assert delete_topic_acls_through(second, topic) == DENIED
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: topic_acls(g, topic) == set(), TIMEOUT_S, "every gateway removed the ACLs")
    for gateway in secured_cluster:
        assert produce_errors(gateway, topic) == [None] * PARTITIONS


def authenticates(port: int, user: str = USER, password: str = PASSWORD) -> bool:
    """Whether a full SCRAM exchange as `user` succeeds on `port`."""
    connection = RawConnection(port)
    try:
        assert connection.handshake(MECHANISM).error_code == ErrorCode.NONE
        client = ScramClient(SCRAM[MECHANISM], user, password, uuid.uuid4().hex)
        first = connection.authenticate(client.first())
        if first is None or first.error_code != ErrorCode.NONE:
            return False
        final = connection.authenticate(client.final(first.auth_bytes))
        return final is not None and final.error_code == ErrorCode.NONE and client.verifies(final.auth_bytes)
    finally:
        connection.close()


def test_a_scram_user_created_through_a_follower_authenticates_through_every_gateway(secured_cluster):
    create_scram_user_through(secured_cluster[1], USER, PASSWORD)
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: authenticates(g.sasl_port), TIMEOUT_S, "the user known to every gateway")
        config = {"bootstrap.servers": f"127.0.0.1:{gateway.sasl_port}",
                  **client_config("confluent-kafka", MECHANISM, USER, PASSWORD)}
        client = AdminClient(config)
        assert client.list_topics(timeout=TIMEOUT_S).brokers
        assert log_lines(gateway, "event='authenticated'", f"principal='User:{USER}'", f"mechanism='{MECHANISM}'")


def test_a_token_created_through_a_follower_authenticates_through_every_gateway(secured_cluster):
    controller, first, second = secured_cluster
    token = create(signed_in(first.sasl_port, "alice"), renewers=("User:quinn",))
    assert token.error_code == ErrorCode.NONE
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: token_session(g.sasl_port, token.token_id, token.hmac) is not None, TIMEOUT_S,
                   "the token known to every gateway")
    renewed = renew(signed_in(second.sasl_port, "quinn"), token.hmac, 60_000)
    assert renewed.error_code == ErrorCode.NONE  # the controller found it by its HMAC, and quinn may renew it
    assert renewed.expiry_timestamp_ms < token.expiry_timestamp_ms


def test_a_new_controller_serves_what_it_replayed_and_the_changes_forwarded_to_it(tmp_path):
    with secured_gateways(tmp_path) as gateways:
        controller, first, second = gateways
        topic = unique("failover")
        create_topic_through(controller, topic)
        create_acls_through(first, topic, DENIED)
        create_scram_user_through(first, USER, PASSWORD)
        token = create(signed_in(first.sasl_port, "alice"))
        controller.kill()
        wait_until(lambda: metadata(second).controller_id in (2, 3), TIMEOUT_S, "another gateway controls")
        successor, follower = (first, second) if metadata(second).controller_id == 2 else (second, first)
        wait_until(lambda: log_lines(successor, "event='broker_ready'"), TIMEOUT_S, "the journals replayed")

        read_denied = (ANONYMOUS, AclOperation.READ, AclPermissionType.DENY)
        create_acls_through(follower, topic, {read_denied})
        create_scram_user_through(follower, "dora", "dora-secret-512")
        for gateway in (successor, follower):
            wait_until(lambda g=gateway: topic_acls(g, topic) == DENIED | {read_denied}, TIMEOUT_S,
                       "old and new ACLs everywhere")
            wait_until(lambda g=gateway: authenticates(g.sasl_port) and authenticates(g.sasl_port, "dora",
                                                                                      "dora-secret-512"),
                       TIMEOUT_S, "old and new users everywhere")
            assert token_session(gateway.sasl_port, token.token_id, token.hmac) is not None
