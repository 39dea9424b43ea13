"""ACLs over authenticated principals: on a SASL listener with the authorizer on, a super user grants
one SASL user a topic; that user produces and consumes it, another user and ANONYMOUS on the
PLAINTEXT listener are refused, and the user is refused a topic nobody granted."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType
from confluent_kafka.admin import ResourceType as AclResourceType

from gateway.testing.ports import free_port
from tests.gateway.clients import CLIENTS, TIMEOUT_S, Sent, same_records
from tests.gateway.sasl_setup import ENABLED, JAAS, PLAIN_USERS, client_config
from tests.gateway.server import GatewayProcess

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    server = GatewayProcess(tmp_path_factory.mktemp("acls-sasl") / "gateway")
    server.sasl_port = free_port()
    server.options = ("--listeners", f"PLAINTEXT://127.0.0.1:{server.port},SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}",
                      "--sasl-enabled-mechanisms", ENABLED, "--sasl-jaas-config", JAAS,
                      "--authorizer-class-name", STANDARD, "--super-users", "User:admin")
    server.start()
    yield server
    server.stop()


def as_user(client: str, user: str) -> dict:
    return client_config(client, "PLAIN", user, PLAIN_USERS[user])


def grant(server: GatewayProcess, topic: str, user: str) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{server.sasl_port}", **as_user("confluent-kafka", "admin")})
    bindings = [AclBinding(AclResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{user}", "*", operation,
                           AclPermissionType.ALLOW) for operation in (AclOperation.WRITE, AclOperation.READ,
                                                                      AclOperation.CREATE)]
    bindings.append(AclBinding(AclResourceType.GROUP, "*", ResourcePatternType.LITERAL, f"User:{user}", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))  # confluent-kafka's consumer has a group
    for future in admin.create_acls(bindings, request_timeout=TIMEOUT_S).values():
        future.result(TIMEOUT_S)


def refused_write(bootstrap: str, topic: str, **config) -> int:
    """The error code confluent-kafka reports for one record sent to `topic`."""
    reports = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000, **config})
    producer.produce(topic, b"x", partition=0, on_delivery=lambda error, message: reports.append(error))
    producer.flush(TIMEOUT_S)
    assert len(reports) == 1 and reports[0] is not None
    return reports[0].code()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_granted_user_produces_and_consumes_and_nobody_else_does(guarded, client):
    topic = f"granted-{client}"
    grant(guarded, topic, "alice")
    sasl = f"127.0.0.1:{guarded.sasl_port}"
    produce, consume = CLIENTS[client]
    sent = [Sent(b"for alice %d" % n, partition=0) for n in range(3)]
    assert produce(sasl, topic, sent, **as_user(client, "alice")) == [0, 1, 2]
    assert same_records(sent, consume(sasl, topic, [0], len(sent), **as_user(client, "alice")))

    denied = KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert refused_write(sasl, topic, **as_user("confluent-kafka", "quinn")) == denied
    assert refused_write(guarded.bootstrap, topic) == denied  # User:ANONYMOUS on the PLAINTEXT listener
    assert refused_write(sasl, f"ungranted-{client}", **as_user("confluent-kafka", "alice")) == denied
