"""Committed offsets survive a gateway crash; groups join as fast as Kafka's; the admin views."""

from __future__ import annotations

import logging

from tests.gateway.groups import Member, assert_resumes_at, create_topic, produce, wait_until

log = logging.getLogger(__name__)

PARTITIONS = 3


def test_offsets_survive_a_gateway_crash(gateway):
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata

    bootstrap, topic = gateway.bootstrap, "durable"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"v{n}" for n in range(30)], PARTITIONS)
    committer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="durable", enable_auto_commit=False)
    committer.commit({KafkaTopicPartition(topic, p): OffsetAndMetadata(3 + p, f"meta-{p}", -1)
                      for p in range(PARTITIONS)})
    committer.close()

    gateway.kill()
    gateway.start()

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "durable", "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        assert [(tp.offset, tp.metadata) for tp in committed] == [(3 + p, f"meta-{p}") for p in range(PARTITIONS)]
        assert_resumes_at(consumer, topic, {p: 3 + p for p in range(PARTITIONS)})
    finally:
        consumer.close()


def test_join_to_first_record_with_kafkas_initial_delay(shared_gateway):
    """Kafka's 3 s group.initial.rebalance.delay.ms plus the work: measured, logged for the report."""
    bootstrap = shared_gateway.bootstrap
    for client in ("kafka-python", "confluent-kafka", "aiokafka"):
        topic = f"first-{client}"
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, ["hello"], 1)
        member = Member(client, bootstrap, topic, f"first-{client}")
        try:
            wait_until(lambda member=member: member.records, 30, "the first record")
            log.warning("join to first record: %.2fs (%s)", member.first_record_s, client)
        finally:
            member.close()


def test_admin_views_of_groups(shared_gateway):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    bootstrap, topic = shared_gateway.bootstrap, "admin-view"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, [f"v{n}" for n in range(9)], PARTITIONS)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    member = Member("confluent-kafka", bootstrap, topic, "watched")
    try:
        wait_until(lambda: len(member.records) == 9, 30, "the member consumed everything")
        listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(30)
        assert "watched" in {g.group_id for g in listed.valid}
        described = admin.describe_consumer_groups(["watched"])["watched"].result(30)
        assert described.state == ConsumerGroupState.STABLE
        assert [len(m.assignment.topic_partitions) for m in described.members] == [PARTITIONS]
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("watched")])["watched"].result(30)
        assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(p, 3) for p in range(PARTITIONS)]
        refused = admin.delete_consumer_groups(["watched"])["watched"]
        assert refused.exception(30) is not None  # not empty
    finally:
        member.close()
    admin.delete_consumer_groups(["watched"])["watched"].result(30)
    gone = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("watched", [TopicPartition(topic, 0)])])["watched"].result(30)
    assert [tp.offset for tp in gone.topic_partitions] == [-1001]
    assert "watched" not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}


def test_a_deleted_topics_offsets_go_with_it(shared_gateway):
    """As Kafka's coordinator removes the offsets of a deleted topic's partitions: a group that
    consumed the topic starts the topic created again under its name from auto.offset.reset,
    not from where it was in the deleted one, and no longer lists the deleted one's offsets."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    bootstrap, topic, group = shared_gateway.bootstrap, "recreated", "recreated-readers"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [f"old{n}" for n in range(8)], 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 8)], asynchronous=False)
    finally:
        consumer.close()
    admin.delete_topics([topic])[topic].result(30)

    def listed() -> list:
        request = [ConsumerGroupTopicPartitions(group)]
        return [tp for tp in admin.list_consumer_group_offsets(request)[group].result(30).topic_partitions
                if tp.offset >= 0]

    wait_until(lambda: not listed(), 10, "the deleted topic's offsets removed")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [f"new{n}" for n in range(12)], 1)  # past the old commit: none is skipped
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        values: list[str] = []
        wait_until(lambda: _read_into(consumer, values) == 12, 60, "the new topic's records")
        assert values == [f"new{n}" for n in range(12)]
    finally:
        consumer.close()


def _read_into(consumer, values: list[str]) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        values.append(message.value().decode())
    return len(values)
