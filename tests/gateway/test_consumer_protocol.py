"""KIP-848 consumer groups with confluent-kafka's group.protocol=consumer: the coordinator assigns.

Members share partitions without overlap, a member that leaves or dies
gives its partitions up (revoked before reassigned: no record is consumed
twice), the range assignor can be asked for, admin clients see the group as
a consumer group, and the group and its offsets survive a gateway crash.
"""

from __future__ import annotations

import logging
import socket
import struct

import pytest

from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
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

CLIENT = "confluent-consumer-protocol"
PARTITIONS = 6
SESSION_TIMEOUT_S = 6
HEARTBEAT = by_name("ConsumerGroupHeartbeat")


@pytest.fixture(scope="module")
def kip848(tmp_path_factory):
    """A gateway with a 6 s consumer session timeout and 500 ms heartbeats (Kafka's: 45 s, 5 s)."""
    server = GatewayProcess(tmp_path_factory.mktemp("kip848"),
                            "--group-consumer-session-timeout-ms", str(SESSION_TIMEOUT_S * 1000),
                            "--group-consumer-heartbeat-interval-ms", "500").start()
    yield server
    server.stop()


def test_members_share_then_leave_and_die(kip848):
    bootstrap, topic, group = kip848.bootstrap, "kip848-share", "kip848-share"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"a{n}" for n in range(60)], PARTITIONS)
    members = [Member(CLIENT, bootstrap, topic, group) for _ in range(3)]
    try:
        wait_until(lambda: share_without_overlap(members, PARTITIONS) and consumed_once(members, 60)
                   and all(len(m.assigned or []) == 2 for m in members), 60, "three members share six, two each")

        after_leave, after_death = leave_then_die(members, bootstrap, topic, PARTITIONS, SESSION_TIMEOUT_S)
        log.warning("KIP-848: partitions moved %.2fs after a member left, %.2fs after one died "
                    "(session timeout %ds)", after_leave, after_death, SESSION_TIMEOUT_S)
    finally:
        for member in members:
            member.close()


def test_first_record_soon_after_subscribe(kip848):
    """No initial rebalance delay in KIP-848: measured, logged for the report."""
    bootstrap, topic = kip848.bootstrap, "kip848-first"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, ["hello"], 1)
    member = Member(CLIENT, bootstrap, topic, "kip848-first")
    try:
        wait_until(lambda: member.records, 30, "the first record")
        log.warning("KIP-848: subscribe to first record %.2fs", member.first_record_s)
    finally:
        member.close()


def test_range_assignor_and_admin_views(kip848):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    bootstrap, topic, group = kip848.bootstrap, "kip848-range", "kip848-range"
    create_topic(bootstrap, topic, PARTITIONS)
    members = [Member(CLIENT, bootstrap, topic, group, assignor="range") for _ in range(2)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        wait_until(lambda: share_without_overlap(members, PARTITIONS) and all(m.assigned for m in members), 60,
                   "two members share six partitions")
        assert sorted(m.assigned for m in members) == [[0, 1, 2], [3, 4, 5]]

        def stable():
            described = admin.describe_consumer_groups([group])[group].result(30)
            return described if described.state == ConsumerGroupState.STABLE else None

        wait_until(stable, 20, "the group is stable")
        described = stable()
        assert described.type == ConsumerGroupType.CONSUMER
        assert described.partition_assignor == "range"
        assert sorted(sorted(tp.partition for tp in m.assignment.topic_partitions) for m in described.members) \
            == [[0, 1, 2], [3, 4, 5]]
        assert all({tp.topic for tp in m.assignment.topic_partitions} == {topic} for m in described.members)
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30)
        assert group in {g.group_id for g in listed.valid}
        assert {g.type for g in listed.valid if g.group_id == group} == {ConsumerGroupType.CONSUMER}
    finally:
        for member in members:
            member.close()


def test_regex_subscription_takes_new_topics(kip848):
    bootstrap = kip848.bootstrap
    create_topic(bootstrap, "kip848-rx-1", 2)
    produce(bootstrap, "kip848-rx-1", ["one-a", "one-b"], 2)
    member = Member(CLIENT, bootstrap, "^kip848-rx-.*", "kip848-rx")
    try:
        wait_until(lambda: len(member.records) == 2, 30, "the records of the topic that matched at subscribe")
        create_topic(bootstrap, "kip848-rx-2", 1)
        produce(bootstrap, "kip848-rx-2", ["two"], 1)
        waited = wait_until(lambda: len(member.records) == 3, 30, "the record of a topic created later")
        log.warning("KIP-848: a new matching topic consumed %.2fs after it was written", waited)
    finally:
        member.close()


def heartbeat(gateway, version: int, **fields):
    """One raw ConsumerGroupHeartbeat and its answer."""
    request = encode_request(HEARTBEAT.key, version, 1, "raw", HEARTBEAT.Request(**fields))
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(HEARTBEAT.key, version, sock.recv(size, socket.MSG_WAITALL))[1]


def test_bad_heartbeats_get_kafkas_errors(kip848):
    join = dict(group_id="kip848-raw", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30000,
                subscribed_topic_names=["kip848-raw"], topic_partitions=[])
    assert heartbeat(kip848, 1, **{**join, "rebalance_timeout_ms": -1}).error_code == ErrorCode.INVALID_REQUEST
    assert heartbeat(kip848, 1, **{**join, "member_id": ""}).error_code == ErrorCode.INVALID_REQUEST
    assert heartbeat(kip848, 1, **{**join, "server_assignor": "sticky"}).error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert heartbeat(kip848, 1, **{**join, "member_epoch": 3}).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    joined = heartbeat(kip848, 1, **join)
    assert (joined.error_code, joined.member_id, joined.member_epoch) == (ErrorCode.NONE, "m-1", 1)
    assert joined.heartbeat_interval_ms == 500 and joined.assignment is not None
    assert heartbeat(kip848, 1, **{**join, "member_epoch": 7}).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert heartbeat(kip848, 0, **{**join, "member_id": "m-2", "member_epoch": 1}).error_code \
        == ErrorCode.UNKNOWN_MEMBER_ID
    left = heartbeat(kip848, 1, group_id="kip848-raw", member_id="m-1", member_epoch=-1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)


def test_group_survives_a_gateway_crash(kip848):
    """Last in the module: it restarts the module's gateway."""
    from confluent_kafka.admin import AdminClient

    bootstrap, topic, group = kip848.bootstrap, "kip848-durable", "kip848-durable"
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, [f"a{n}" for n in range(30)], 3)
    member = Member(CLIENT, bootstrap, topic, group)
    try:
        wait_until(lambda: len(member.records) == 30 and member.committed == 30, 30, "all consumed and committed")
        before = _members(AdminClient({"bootstrap.servers": bootstrap}), group)

        kip848.kill()
        kip848.start()

        after = _members(AdminClient({"bootstrap.servers": bootstrap}), group)
        assert after == before, "the member and its assignment came back with the group"
        produce(bootstrap, topic, [f"b{n}" for n in range(30)], 3)
        try:
            wait_until(lambda: len(member.records) == 60, 30, "the records produced after the crash")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; gateway log:\n{kip848.log_tail(80)}") from None
        assert len(set(member.records)) == 60, "committed offsets survived: nothing was consumed twice"
    finally:
        member.close()


def _members(admin, group: str) -> list[tuple[str, list[int]]]:
    described = admin.describe_consumer_groups([group])[group].result(30)
    return sorted((m.member_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
                  for m in described.members)
