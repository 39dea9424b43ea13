"""A wildcard listener is never advertised: clients are told `advertised.listeners`, or this machine's name."""

import socket

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.gateway.clients import TIMEOUT_S, Sent, confluent_produce
from tests.gateway.server import GatewayProcess


def told(bootstrap: str, group: str) -> set[tuple[str, int]]:
    """Every endpoint the gateway tells a client: brokers in Metadata and DescribeCluster, the
    group coordinator (FindCoordinator) and the advertised.listeners broker config."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    endpoints = {(b.host, b.port) for b in admin.list_topics(timeout=TIMEOUT_S).brokers.values()}
    endpoints |= {(n.host, n.port) for n in admin.describe_cluster(request_timeout=TIMEOUT_S).result().nodes}
    coordinator = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result().coordinator
    endpoints.add((coordinator.host, coordinator.port))
    broker = ConfigResource(ResourceType.BROKER, "0")
    advertised = admin.describe_configs([broker])[broker].result(TIMEOUT_S)["advertised.listeners"].value
    host, port = advertised.removeprefix("PLAINTEXT://").rsplit(":", 1)
    return endpoints | {(host, int(port))}


def consume_in_group(bootstrap: str, topic: str, group: str) -> bytes:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(int(TIMEOUT_S)):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                return message.value()
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


def test_a_client_reaches_a_0_0_0_0_listener_through_the_advertised_listener(tmp_path):
    server = GatewayProcess(tmp_path / "gateway")
    server.options = ("--listeners", f"PLAINTEXT://0.0.0.0:{server.port}",
                      "--advertised-listeners", f"PLAINTEXT://127.0.0.1:{server.port}")
    server.start()
    try:
        confluent_produce(server.bootstrap, "through-wildcard", [Sent(b"hello")])
        assert consume_in_group(server.bootstrap, "through-wildcard", "wildcard") == b"hello"
        assert told(server.bootstrap, "wildcard") == {("127.0.0.1", server.port)}
    finally:
        server.stop()


def test_an_empty_listener_host_advertises_this_machines_name(tmp_path):
    try:
        socket.getaddrinfo(socket.getfqdn(), None)
    except OSError:
        pytest.skip("this machine's name does not resolve: clients could not reach what is advertised")
    server = GatewayProcess(tmp_path / "gateway")
    server.options = ("--listeners", f"PLAINTEXT://:{server.port}")
    server.start()
    try:
        confluent_produce(server.bootstrap, "through-empty-host", [Sent(b"hello")])
        assert consume_in_group(server.bootstrap, "through-empty-host", "empty-host") == b"hello"
        assert told(server.bootstrap, "empty-host") == {(socket.getfqdn(), server.port)}
    finally:
        server.stop()
