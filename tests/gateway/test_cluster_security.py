"""ACLs and SCRAM credentials in a cluster of gateways (issue 17): whatever gateway a change is
sent to, the controller journals it and every gateway authorizes and authenticates by it."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.clients import TIMEOUT_S
from tests.gateway.groups import wait_until
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import client_config, create_scram_users, log_lines, with_sasl_listener
from tests.gateway.test_acls import STANDARD, admin, deny, unique
from tests.gateway.test_cluster import PARTITIONS, create_topic_through, gateway_cluster, spread_over
from tests.protocol.sasl.scram_client import ScramClient

MECHANISM = "SCRAM-SHA-512"
USER, PASSWORD = "cleo", "cleo-secret-512"


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    """Three gateways with an authorizer that lets everyone do what no ACL speaks of, each with a
    SASL_PLAINTEXT listener beside its PLAINTEXT one."""
    with gateway_cluster(tmp_path_factory.mktemp("cluster"), 3, "--authorizer-class-name", STANDARD,
                         "--allow-everyone-if-no-acl-found", "true", prepare=with_sasl_listener) as gateways:
        yield gateways


def topic_acls(gateway, topic: str) -> set[tuple[str, int]]:
    """(principal, operation) of the ACLs on `topic`, as DescribeAcls through `gateway` tells."""
    selected = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    client = admin(gateway)  # held until the answer comes: a client dropped cancels it
    return {(b.principal, b.operation) for b in client.describe_acls(selected).result(TIMEOUT_S)}


def produce_errors(gateway, topic: str) -> list:
    """The error of one record produced to each partition, through `gateway` (None where it was written)."""
    reports = {}
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "message.timeout.ms": 20000})
    for partition in range(PARTITIONS):
        producer.produce(topic, b"x", partition=partition,
                         on_delivery=lambda err, msg, n=partition: reports.__setitem__(n, err))
    assert producer.flush(TIMEOUT_S) == 0
    return [None if reports[n] is None else reports[n].code() for n in range(PARTITIONS)]


def test_an_acl_sent_to_a_follower_is_enforced_and_lifted_by_every_gateway(secured_cluster):
    controller, first, second = secured_cluster
    topic = unique("denied")
    create_topic_through(controller, topic)
    wait_until(lambda: spread_over(controller, topic, {1, 2, 3}), TIMEOUT_S, "every gateway leads a partition")
    deny(first, ResourceType.TOPIC, topic, AclOperation.WRITE)
    wanted = {("User:ANONYMOUS", AclOperation.WRITE), ("User:*", AclOperation.DESCRIBE)}
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: topic_acls(g, topic) == wanted, TIMEOUT_S, "the ACLs shown by every gateway")
    for gateway in secured_cluster:  # each gateway leads some partitions: each refuses
        assert produce_errors(gateway, topic) == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * PARTITIONS

    selected = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    client = admin(second)
    [deleted] = client.delete_acls([selected], request_timeout=TIMEOUT_S).values()
    assert {(b.principal, b.operation) for b in deleted.result(TIMEOUT_S)} == wanted
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: topic_acls(g, topic) == set(), TIMEOUT_S, "the ACLs gone from every gateway")
    for gateway in secured_cluster:
        assert produce_errors(gateway, topic) == [None] * PARTITIONS


def authenticates(port: int) -> bool:
    """Whether a full SCRAM exchange as the user succeeds on `port`."""
    connection = RawConnection(port)
    try:
        assert connection.handshake(MECHANISM).error_code == ErrorCode.NONE
        client = ScramClient(SCRAM[MECHANISM], USER, PASSWORD, uuid.uuid4().hex)
        first = connection.authenticate(client.first())
        if first is None or first.error_code != ErrorCode.NONE:
            return False
        final = connection.authenticate(client.final(first.auth_bytes))
        return final is not None and final.error_code == ErrorCode.NONE and client.verifies(final.auth_bytes)
    finally:
        connection.close()


def test_a_scram_user_created_through_a_follower_authenticates_through_every_gateway(secured_cluster):
    create_scram_users(secured_cluster[1], {MECHANISM: (USER, PASSWORD)})
    for gateway in secured_cluster:
        wait_until(lambda g=gateway: authenticates(g.sasl_port), TIMEOUT_S, "the user known to every gateway")
        config = {"bootstrap.servers": f"127.0.0.1:{gateway.sasl_port}",
                  **client_config("confluent-kafka", MECHANISM, USER, PASSWORD)}
        client = AdminClient(config)
        assert client.list_topics(timeout=TIMEOUT_S).brokers
        assert log_lines(gateway, "event='authenticated'", f"principal='User:{USER}'", f"mechanism='{MECHANISM}'")
