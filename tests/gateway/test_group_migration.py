"""Online migration: a classic member (kafka-python, confluent-kafka) and a KIP-848 one in one group.

The KIP-848 member joins a classic group that already has a member: the
group becomes a consumer group in which the classic member keeps speaking
JoinGroup/SyncGroup/Heartbeat; the two share the partitions without overlap
and every record is consumed once. When the KIP-848 member leaves, the group
is a classic group again and the classic member gets every partition back.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from tests.gateway.groups import Member, consumed_once, create_topic, produce, share_without_overlap, wait_until

PARTITIONS = 6


def group_type(bootstrap: str, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(30).valid
    return next(str(g.type).rsplit(".", 1)[-1].lower() for g in listed if g.group_id == group)


@pytest.mark.parametrize("classic_client", ["kafka-python", "confluent-kafka"])
def test_classic_and_kip848_members_share_a_group(shared_gateway, classic_client):
    bootstrap, topic, group = shared_gateway.bootstrap, f"migration-{classic_client}", f"migration-{classic_client}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"a{n}" for n in range(60)], PARTITIONS)
    classic = Member(classic_client, bootstrap, topic, group)
    members = [classic]
    try:
        wait_until(lambda: classic.assigned == list(range(PARTITIONS)) and consumed_once(members, 60), 60,
                   "the classic member consumes every partition")
        assert group_type(bootstrap, group) == "classic"

        modern = Member("confluent-consumer-protocol", bootstrap, topic, group)
        members.append(modern)
        wait_until(lambda: share_without_overlap(members, PARTITIONS)
                   and all(len(m.assigned or []) == 3 for m in members), 60, "both members share six, three each")
        assert group_type(bootstrap, group) == "consumer"
        produce(bootstrap, topic, [f"b{n}" for n in range(60)], PARTITIONS)
        wait_until(lambda: consumed_once(members, 120), 30, "records are consumed once by the mixed group")

        wait_until(lambda: modern.committed == len(modern.records), 10, "the KIP-848 member committed")
        modern.close()
        wait_until(lambda: classic.assigned == list(range(PARTITIONS)), 60, "the classic member gets everything")
        assert group_type(bootstrap, group) == "classic"
        produce(bootstrap, topic, [f"c{n}" for n in range(60)], PARTITIONS)
        wait_until(lambda: consumed_once(members, 180), 30, "records after the downgrade are consumed once")
    finally:
        for member in members:
            member.close()


def test_a_mixed_group_survives_a_gateway_crash(tmp_path):
    """The consumer group with a classic member is journaled with that member's classic
    metadata: after a SIGKILL and a restart both members go on sharing the partitions
    and every new record is consumed (at least once: uncommitted ones may come again)."""
    from tests.gateway.server import GatewayProcess

    gateway = GatewayProcess(tmp_path / "gateway").start()
    topic = group = "migration-crash"
    members = []
    try:
        create_topic(gateway.bootstrap, topic, PARTITIONS)
        members.append(Member("kafka-python", gateway.bootstrap, topic, group))
        wait_until(lambda: members[0].assigned == list(range(PARTITIONS)), 60, "the classic member is assigned")
        members.append(Member("confluent-consumer-protocol", gateway.bootstrap, topic, group))
        wait_until(lambda: all(len(m.assigned or []) == 3 for m in members), 60, "three partitions each")

        gateway.kill()
        gateway.start()
        assert group_type(gateway.bootstrap, group) == "consumer"
        produce(gateway.bootstrap, topic, [f"after{n}" for n in range(60)], PARTITIONS)
        wait_until(lambda: {r[2] for m in members for r in m.records} >= {f"after{n}" for n in range(60)}, 60,
                   "the records produced after the restart are consumed")
        assert share_without_overlap(members, PARTITIONS)
    finally:
        for member in members:
            member.close()
        gateway.stop()


def test_a_classic_member_takes_over_an_empty_consumer_group(shared_gateway):
    """A classic member joining a consumer group whose members all left: Kafka deletes the
    empty consumer group and makes a classic one (maybeDeleteEmptyConsumerGroup), whose first
    GroupMetadata record in __consumer_offsets has protocol type "" as Kafka writes an empty
    group's. The gateway once failed to encode that record (a null protocol type) and crashed."""
    from tests.gateway.test_internal_topics import OFFSETS, decoded_offsets_record, kafka_partition, read_partition

    bootstrap, topic, group = shared_gateway.bootstrap, "empty-downgrade", "empty-downgrade"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"a{n}" for n in range(60)], PARTITIONS)
    modern = Member("confluent-consumer-protocol", bootstrap, topic, group)
    try:
        wait_until(lambda: consumed_once([modern], 60) and modern.committed == 60, 60, "the KIP-848 member commits")
    finally:
        modern.close()
    assert group_type(bootstrap, group) == "consumer"

    classic = Member("confluent-kafka", bootstrap, topic, group)
    try:
        wait_until(lambda: classic.assigned == list(range(PARTITIONS)), 60, "the classic member gets every partition")
        assert group_type(bootstrap, group) == "classic"
        produce(bootstrap, topic, [f"b{n}" for n in range(60)], PARTITIONS)
        wait_until(lambda: {r[2] for r in classic.records} == {f"b{n}" for n in range(60)}, 30,
                   "the classic member consumes from the committed offsets on")
    finally:
        classic.close()

    def group_records(records):
        return [decoded_offsets_record(key, value)[2] for _, key, value in records
                if key[:2] == b"\x00\x02" and decoded_offsets_record(key, value)[1] == group]
    records = read_partition(bootstrap, OFFSETS, kafka_partition(group),
                             lambda got: any(g and g[0] == "consumer" for g in group_records(got)))
    assert ("", 0, None, None, []) in group_records(records)  # the empty classic group, as Kafka writes it
