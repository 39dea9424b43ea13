"""Client quotas in a cluster of gateways: whatever gateway AlterClientQuotas is sent to, the controller
journals the change; every gateway describes the cluster's quotas and enforces them on its own
connections (rates are measured per gateway, as per broker in Kafka); a new controller serves the quotas
it replayed.

kafka-python's admin sends each request to the gateway chosen here (by node id); confluent-kafka
producers report the throttled responses (`throttle_cb`) with the node that throttled them."""

from __future__ import annotations

import socket
import time
from contextlib import ExitStack

import pytest
from confluent_kafka import Producer

from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import create_topic_through, gateway_cluster, leaders, metadata, spread_over
from tests.gateway.test_connection_limits import log_count
from tests.gateway.test_connection_rates import answered, opened
from tests.gateway.test_quotas import AT_LEAST_S, RATE, SHORT_WINDOWS, TIMEOUT_S, VALUE, QuotaAdmin, entity, op

MESSAGES = 100  # a megabyte: at RATE, about 4 s beyond the first second's allowance
OK = (0, None)


def alter_through(gateway, node_id: int, *entries) -> list[tuple[int, str | None]]:
    admin = QuotaAdmin(gateway.bootstrap)
    try:
        return admin.alter(*entries, node_id=node_id)
    finally:
        admin.close()


def described_by(gateway, node_id: int) -> dict:
    """Every quota, as the gateway `node_id` describes them itself."""
    admin = QuotaAdmin(gateway.bootstrap)
    try:
        return admin.describe(node_id=node_id)
    finally:
        admin.close()


def produce_to(gateway, topic: str, partitions: list[int], client_id: str) -> tuple[float, set[int]]:
    """Seconds to produce MESSAGES values as `client_id` to `partitions`, and the nodes that throttled it."""
    throttled_by: set[int] = set()
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "client.id": client_id, "batch.size": 2 * len(VALUE),
                         "throttle_cb": lambda event: event.throttle_time and throttled_by.add(event.broker_id)})
    started = time.monotonic()
    for number in range(MESSAGES):
        producer.produce(topic, VALUE, partition=partitions[number % len(partitions)])
        producer.poll(0)
    assert producer.flush(TIMEOUT_S * 3) == 0
    return time.monotonic() - started, throttled_by


def led_by(gateway, topic: str, node_id: int) -> list[int]:
    return [number for number, leader in leaders(gateway, topic).items() if leader == node_id]


def test_quotas_altered_through_a_follower_are_described_and_enforced_by_every_gateway(tmp_path):
    with gateway_cluster(tmp_path, 2, *SHORT_WINDOWS) as (controller, follower):
        create_topic_through(controller, "limited")
        wait_until(lambda: spread_over(follower, "limited", {1, 2}), TIMEOUT_S, "both gateways lead partitions")
        assert alter_through(follower, 2, (entity(client_id="slow-writer"), [op("producer_byte_rate", RATE)]),
                             (entity(user=None), [op("request_percentage", 200)])) == [OK, OK]
        quotas = {(("client-id", "slow-writer"),): {"producer_byte_rate": RATE},
                  (("user", None),): {"request_percentage": 200}}
        assert described_by(follower, 2) == quotas  # the gateway it went through, at once
        wait_until(lambda: described_by(controller, 1) == quotas, TIMEOUT_S, "the controller has them")

        partitions = led_by(follower, "limited", 2)
        free_seconds, free_throttled_by = produce_to(follower, "limited", partitions, "free-writer")
        slow_seconds, slow_throttled_by = produce_to(follower, "limited", partitions, "slow-writer")
        assert free_throttled_by == set()
        assert slow_throttled_by == {2}  # the follower measured its own connections and throttled them
        assert slow_seconds >= AT_LEAST_S, (slow_seconds, free_seconds)

        assert alter_through(follower, 2, (entity(user=None), [op("request_percentage", remove=True)])) == [OK]
        quotas.pop((("user", None),))
        for gateway, node_id in ((controller, 1), (follower, 2)):
            wait_until(lambda g=gateway, n=node_id: described_by(g, n) == quotas, TIMEOUT_S, "the removal everywhere")


def second_loopback_address() -> str:
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("no loopback addresses beyond 127.0.0.1 here")
    return "127.0.0.2"


def test_a_new_controller_keeps_the_quotas_and_enforces_them(tmp_path):
    source = second_loopback_address()
    with gateway_cluster(tmp_path, 3, *SHORT_WINDOWS) as gateways:
        controller, first, second = gateways
        create_topic_through(controller, "kept")
        assert alter_through(first, 2, (entity(client_id="slow-writer"), [op("producer_byte_rate", RATE)])) == [OK]
        controller.kill()
        wait_until(lambda: metadata(second).controller_id in (2, 3), TIMEOUT_S, "another gateway controls")
        successor, follower = (first, second) if metadata(second).controller_id == 2 else (second, first)
        successor_id, follower_id = (2, 3) if successor is first else (3, 2)
        wait_until(lambda: spread_over(successor, "kept", {2, 3}), TIMEOUT_S, "the partitions moved")

        # 1 connection a second, measured over at least a second: of four at once, some are closed
        assert alter_through(follower, follower_id, (entity(ip=source), [op("connection_creation_rate", 1)])) == [OK]
        quotas = {(("client-id", "slow-writer"),): {"producer_byte_rate": RATE},
                  (("ip", source),): {"connection_creation_rate": 1}}
        for gateway, node_id in ((successor, successor_id), (follower, follower_id)):
            wait_until(lambda g=gateway, n=node_id: described_by(g, n) == quotas, TIMEOUT_S, "old and new quotas")

        # the successor enforces them on its connections, its services rebuilt as the controller's
        seconds, throttled_by = produce_to(successor, "kept", led_by(successor, "kept", successor_id), "slow-writer")
        assert throttled_by == {successor_id}
        assert seconds >= AT_LEAST_S
        with ExitStack() as stack:
            limited = opened(stack, successor, 4, source)
            assert [answered(sock) for sock in limited].count(False) >= 1
        assert log_count(successor, "connection_throttled", source, "connection_creation_rate") >= 1
