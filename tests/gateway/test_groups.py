"""Consumer groups with the real clients: sharing partitions, members leaving and dying, static members."""

from __future__ import annotations

import logging
import re

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
from tests.gateway.sasl_setup import log_lines
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


def restarted_static_member(gateway: GatewayProcess, group: str, instance: str) -> str:
    """The member id the gateway gave the restarted static member `instance` as it took the old one's place."""
    replaced = log_lines(gateway, "event='static_member_replaced'", f"group='{group}'", f"instance='{instance}'")
    assert len(replaced) == 1, f"{instance} rejoined as the static member it was once: {replaced}"
    return re.search(r"new='([^']+)'", replaced[0]).group(1)


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_static_member_restarts_without_rebalance(groups_gateway, client):
    bootstrap, topic, group = groups_gateway.bootstrap, f"static-{client}", f"static-{client}"
    create_topic(bootstrap, topic, PARTITIONS)
    first, second = (Member(client, bootstrap, topic, group, instance=f"instance-{n}") for n in (1, 2))
    try:
        wait_until(lambda: share_without_overlap([first, second], PARTITIONS) and first.assigned and second.assigned,
                   60, "two static members share the partitions")
        kept = first.assigned
        first.close()  # a static member does not leave the group when it closes
        first = Member(client, bootstrap, topic, group, instance="instance-1")
        wait_until(lambda: first.assigned == kept, 30, "the restarted static member gets its partitions back")
        produce(bootstrap, topic, [f"s{n}" for n in range(12)], PARTITIONS)
        wait_until(lambda: consumed_once([first, second], 12), 30, "both members consume")
        # The gateway took it for the static member it was, and started no rebalance for it: each rebalance
        # logs its cause, and one its return caused names its new member id. One another member caused
        # (its own rejoin, its session lapsing on a loaded machine) names that member and is not counted,
        # nor one the restarted member asked for later by joining again under its new id ("rejoins"): it
        # led the group, and a leader's JoinGroup rebalances in Kafka too (kafka-python sent one 0.14 s
        # after its return in a loaded suite, for a reason of its own).
        restarted = restarted_static_member(groups_gateway, group, "instance-1")
        caused = [line for line in log_lines(groups_gateway, "event='group_rebalance_preparing'", f"group='{group}'",
                                             restarted) if f"member {restarted} rejoins" not in line]
        assert caused == []
    finally:
        first.close()
        second.close()
