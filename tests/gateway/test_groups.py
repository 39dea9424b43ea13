"""Consumer groups with the real clients: sharing partitions, members leaving and dying, static members."""

from __future__ import annotations

import logging
import time

import pytest

from tests.gateway.groups import (
    Member,
    consumed_once,
    create_topic,
    leave_then_die,
    produce,
    share_without_overlap,
    wait_until,
)
from tests.gateway.server import GatewayProcess

log = logging.getLogger(__name__)

PARTITIONS = 6
SESSION_TIMEOUT_S = 6  # the members' session.timeout.ms
CASES = [
    ("kafka-python", "range"),
    ("kafka-python", "cooperative-sticky"),
    ("confluent-kafka", "range"),
    ("confluent-kafka", "cooperative-sticky"),
    ("aiokafka", ""),
]


@pytest.fixture(scope="module")
def groups_gateway(tmp_path_factory):
    """A gateway whose new groups wait 300 ms for more members instead of Kafka's 3 s."""
    server = GatewayProcess(tmp_path_factory.mktemp("groups"), "--group-initial-rebalance-delay-ms", "300").start()
    yield server
    server.stop()


@pytest.mark.parametrize("client,assignor", CASES)
def test_members_share_then_leave_and_die(groups_gateway, client, assignor):
    bootstrap, topic, group = groups_gateway.bootstrap, f"share-{client}-{assignor}", f"group-{client}-{assignor}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"a{n}" for n in range(60)], PARTITIONS)
    members = [Member(client, bootstrap, topic, group, assignor=assignor) for _ in range(3)]
    try:
        wait_until(lambda: share_without_overlap(members, PARTITIONS) and all(m.assigned for m in members)
                   and consumed_once(members, 60), 60, "three members share six partitions")

        after_leave, after_death = leave_then_die(members, bootstrap, topic, PARTITIONS, SESSION_TIMEOUT_S)
        log.info("partitions moved %.2fs after a member left, %.2fs after one died (%s)",
                 after_leave, after_death, client)
    finally:
        for member in members:
            member.close()


def rebalances(gateway: GatewayProcess, group: str) -> int:
    return sum(1 for line in gateway.log_path.read_text().splitlines()
               if "group_rebalance_preparing" in line and f"group='{group}'" in line)


def settled_rebalances(gateway: GatewayProcess, group: str, quiet_s: float = 3.0) -> int:
    """The group's rebalance count once it has not changed for `quiet_s`: a client
    may rejoin on its own right after the first assignment (kafka-python does
    when its metadata lagged), which is not what a test of restarts measures."""
    count, since = rebalances(gateway, group), time.monotonic()
    deadline = since + 30
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.2)
        now = rebalances(gateway, group)
        if now != count:
            count, since = now, time.monotonic()
    return count


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_static_member_restarts_without_rebalance(groups_gateway, client):
    bootstrap, topic, group = groups_gateway.bootstrap, f"static-{client}", f"static-{client}"
    create_topic(bootstrap, topic, PARTITIONS)
    first, second = (Member(client, bootstrap, topic, group, instance=f"instance-{n}") for n in (1, 2))
    try:
        wait_until(lambda: share_without_overlap([first, second], PARTITIONS) and first.assigned and second.assigned,
                   60, "two static members share the partitions")
        before, kept = settled_rebalances(groups_gateway, group), first.assigned
        first.close()  # a static member does not leave the group when it closes
        first = Member(client, bootstrap, topic, group, instance="instance-1")
        wait_until(lambda: first.assigned == kept, 30, "the restarted static member gets its partitions back")
        produce(bootstrap, topic, [f"s{n}" for n in range(12)], PARTITIONS)
        wait_until(lambda: consumed_once([first, second], 12), 30, "both members consume")
        assert rebalances(groups_gateway, group) == before
    finally:
        first.close()
        second.close()
