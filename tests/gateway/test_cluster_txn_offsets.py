"""Offsets sent to a transaction when one gateway coordinates the group and another the transactional
id (issue 16, item 4): TxnOffsetCommit goes to the group coordinator, which holds them pending until
the transaction coordinator's marker reaches the group's __consumer_offsets partition; committed
transactions move the group's offsets, aborted ones never do, also when the group coordinator is
killed in between."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from protocol.kafka.apis import by_name
from protocol.kafka.coordinator_records import coordinator_partition
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import Sent, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import PARTITIONS, create_topic_through, gateway_cluster, leaders, spread_over
from tests.gateway.test_cluster_coordinators import OFFSETS, TRANSACTION, TRANSACTIONS, found_coordinators
from tests.gateway.test_validation import Connection

OFFSET_FETCH, TXN_OFFSET_COMMIT = by_name("OffsetFetch"), by_name("TxnOffsetCommit")
INIT_PRODUCER_ID, ADD_OFFSETS = by_name("InitProducerId"), by_name("AddOffsetsToTxn")
INPUT, OUTPUT = "ctp-in", "ctp-out"
TIMEOUT_S = 30
ASKED_AGAIN = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}


def transform(value: bytes) -> bytes:
    return b"out:" + value


def split_coordinators(gateway, group_node: int, transaction_node: int) -> tuple[str, str]:
    """A group coordinated by `group_node` and a transactional id by `transaction_node`, as the
    coordinator hash and the internal topics' leaders place them (FindCoordinator agreeing)."""
    groups = found_coordinators(gateway, [f"ctp-group-{n}" for n in range(30)])
    ids = found_coordinators(gateway, [f"ctp-id-{n}" for n in range(30)], TRANSACTION)
    group = next(key for key, node in groups.items() if node == group_node)
    transactional_id = next(key for key, node in ids.items() if node == transaction_node)
    assert leaders(gateway, OFFSETS)[coordinator_partition(group, 50)] == group_node
    assert leaders(gateway, TRANSACTIONS)[coordinator_partition(transactional_id, 50)] == transaction_node
    return group, transactional_id


def stable_fetch(gateway, group: str, topic: str):
    """OffsetFetch v7 with require_stable (KIP-447) from `gateway`."""
    connection = Connection(gateway.port)
    try:
        return connection.call(OFFSET_FETCH, 7, OFFSET_FETCH.Request(
            group_id=group, require_stable=True,
            topics=[OFFSET_FETCH.Request.Topics(name=topic, partition_indexes=list(range(PARTITIONS)))]))
    finally:
        connection.close()


def stable_fetch_errors(gateway, group: str, topic: str) -> set[ErrorCode]:
    """The partition errors of that OffsetFetch, from the group's coordinator."""
    answer = stable_fetch(gateway, group, topic)
    assert answer.error_code == ErrorCode.NONE
    return {p.error_code for t in answer.topics for p in t.partitions}


def committed(gateway, group: str, topic: str) -> dict[int, int] | None:
    """Partition -> the group's committed offset (-1001: none), as a read_committed consumer asks;
    None while no coordinator answers (it moves)."""
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": group,
                         "isolation.level": "read_committed"})
    try:
        wanted = [TopicPartition(topic, number) for number in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(wanted, timeout=TIMEOUT_S)}
    except KafkaException:
        return None
    finally:
        consumer.close()


def read_committed_output(gateway, topic: str) -> list[bytes]:
    """What a read_committed consumer sees of `topic` before an "end" record written to each
    partition after the transactions: it passes an open transaction only once its marker is in."""
    confluent_produce(gateway.bootstrap, topic, [Sent(b"end", partition=p) for p in range(PARTITIONS)])
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "ctp-check",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(PARTITIONS)])
    seen, ended = [], set()
    try:
        deadline = time.monotonic() + 60
        while len(ended) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            if message.value() == b"end":
                ended.add(message.partition())
            else:
                seen.append(message.value())
    finally:
        consumer.close()
    assert len(ended) == PARTITIONS, "a partition's last transaction never ended"
    return seen


def input_records(gateway, count: int) -> list[bytes]:
    values = [b"%d" % n for n in range(count)]
    confluent_produce(gateway.bootstrap, INPUT, [Sent(value, partition=n % PARTITIONS)
                                                 for n, value in enumerate(values)])
    return values


def cluster_with_topics(gateways) -> None:
    for topic in (INPUT, OUTPUT):
        create_topic_through(gateways[1], topic)
        wait_until(lambda topic=topic: spread_over(gateways[1], topic, {1, 2, 3}), 30, "partitions led by all three")


def test_a_consume_transform_produce_loop_commits_offsets_with_its_transactions(tmp_path):
    """confluent-kafka's send_offsets_to_transaction as a member of the group (generation and
    member id checked), every third transaction aborted and read again from the committed offsets:
    offsets are unstable while a transaction holds them, the group ends at the end of its input,
    and every input record is transformed exactly once in the committed output."""
    with gateway_cluster(tmp_path) as gateways:
        cluster_with_topics(gateways)
        group, transactional_id = split_coordinators(gateways[0], group_node=3, transaction_node=2)
        values = input_records(gateways[0], 600)
        consumer = Consumer({"bootstrap.servers": gateways[0].bootstrap, "group.id": group,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "isolation.level": "read_committed"})
        producer = Producer({"bootstrap.servers": gateways[0].bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(TIMEOUT_S)
        consumer.subscribe([INPUT])
        transactions = aborted = processed = 0
        try:
            deadline = time.monotonic() + 120
            while processed < len(values) and time.monotonic() < deadline:
                messages = [m for m in consumer.consume(100, timeout=1) if m.error() is None]
                if not messages:
                    continue
                transactions += 1
                producer.begin_transaction()
                for m in messages:
                    producer.produce(OUTPUT, transform(m.value()), partition=m.partition())
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata(), TIMEOUT_S)
                if transactions % 3:
                    producer.commit_transaction(TIMEOUT_S)
                    processed += len(messages)
                    continue
                assert ErrorCode.UNSTABLE_OFFSET_COMMIT in stable_fetch_errors(gateways[2], group, INPUT)
                producer.abort_transaction(TIMEOUT_S)
                aborted += 1
                for tp in consumer.committed(consumer.assignment(), timeout=TIMEOUT_S):
                    consumer.seek(TopicPartition(INPUT, tp.partition, max(tp.offset, 0)))
            assert processed == len(values) and aborted > 0
        finally:
            consumer.close()
        assert_ended_at_the_end(gateways, group, len(values))
        assert sorted(read_committed_output(gateways[1], OUTPUT)) == sorted(map(transform, values))


def assert_ended_at_the_end(gateways, group: str, count: int) -> None:
    """The group's offsets are at the end of the input once the last transaction completed (its
    markers follow the commit's answer), and then stable at its coordinator (node 3)."""
    wait_until(lambda: committed(gateways[1], group, INPUT) == dict.fromkeys(range(PARTITIONS), count // PARTITIONS),
               30, "the group's offsets at the end of the input")
    assert stable_fetch_errors(gateways[2], group, INPUT) == {ErrorCode.NONE}


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize("victim", [3, 1], ids=["follower", "controller"])
def test_the_outcome_is_whole_when_the_group_coordinator_dies_before_the_end(tmp_path, victim, commit):
    """kill -9 of the group coordinator once it took TxnOffsetCommit and before EndTxn: the gateway
    that leads the group's partition next replays the pending offsets, and the transaction
    coordinator's marker reaches it there; the group's offsets move with the output, or neither.
    The controller's death moves the controller first, which then moves the partition."""
    with gateway_cluster(tmp_path) as gateways:
        cluster_with_topics(gateways)
        survivor, coordinator = gateways[1], gateways[victim - 1]  # node 2 coordinates the transactional id
        group, transactional_id = split_coordinators(survivor, group_node=victim, transaction_node=2)
        values = input_records(survivor, 300)
        consumer = Consumer({"bootstrap.servers": survivor.bootstrap, "group.id": group,
                             "enable.auto.commit": False, "isolation.level": "read_committed"})
        consumer.assign([TopicPartition(INPUT, p, 0) for p in range(PARTITIONS)])
        producer = Producer({"bootstrap.servers": survivor.bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        read = 0
        try:
            while read < len(values):
                for m in [m for m in consumer.consume(100, timeout=1) if m.error() is None]:
                    producer.produce(OUTPUT, transform(m.value()), partition=m.partition())
                    read += 1
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), TIMEOUT_S)
        finally:
            consumer.close()
        producer.flush(TIMEOUT_S)
        assert stable_fetch_errors(coordinator, group, INPUT) == {ErrorCode.UNSTABLE_OFFSET_COMMIT}
        coordinator.kill()
        (producer.commit_transaction if commit else producer.abort_transaction)(TIMEOUT_S)
        expected = {p: len(values) // PARTITIONS if commit else -1001 for p in range(PARTITIONS)}
        wait_until(lambda: committed(survivor, group, INPUT) == expected, 60,
                   "the group's offsets as the transaction ended")
        output = read_committed_output(survivor, OUTPUT)
        assert sorted(output) == (sorted(map(transform, values)) if commit else [])


def test_a_fenced_producers_offsets_are_dropped_and_refused_at_the_group_coordinator(tmp_path):
    """Kafka's requests, each to its coordinator: a producer's pending offsets are dropped when a new
    producer of its transactional id fences it (the abort marker, at the bumped epoch, reaches the
    group's partition on another gateway), and TxnOffsetCommit at the fenced epoch is then refused
    there with INVALID_PRODUCER_EPOCH, as the partition's producer state refuses it in Kafka."""
    with gateway_cluster(tmp_path) as gateways:
        cluster_with_topics(gateways)
        group, transactional_id = split_coordinators(gateways[0], group_node=3, transaction_node=2)
        wait_until(lambda: stable_fetch(gateways[2], group, INPUT).error_code == ErrorCode.NONE, 30,
                   "the group's coordinator serves it (it may be loading)")
        transactions, groups = Connection(gateways[1].port), Connection(gateways[2].port)
        try:
            producer_id, epoch = init_producer_id(transactions, transactional_id)
            added = transactions.call(ADD_OFFSETS, 3, ADD_OFFSETS.Request(
                transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch, group_id=group))
            assert added.error_code == ErrorCode.NONE
            assert txn_offset_commit(groups, transactional_id, group, producer_id, epoch) == {ErrorCode.NONE}
            assert stable_fetch_errors(gateways[2], group, INPUT) == {ErrorCode.UNSTABLE_OFFSET_COMMIT}
            assert init_producer_id(transactions, transactional_id)[1] > epoch + 1  # the abort bumped it first
            wait_until(lambda: stable_fetch_errors(gateways[2], group, INPUT) == {ErrorCode.NONE}, 30,
                       "the fenced transaction's offsets dropped")
            wait_until(lambda: committed(gateways[0], group, INPUT) == dict.fromkeys(range(PARTITIONS), -1001), 30,
                       "no offset committed")
            assert txn_offset_commit(groups, transactional_id, group, producer_id, epoch) == {
                ErrorCode.INVALID_PRODUCER_EPOCH}
        finally:
            transactions.close()
            groups.close()


def init_producer_id(connection: Connection, transactional_id: str) -> tuple[int, int]:
    """(producer id, epoch) of InitProducerId v3, asked again as clients do while the coordinator
    loads or completes an open transaction."""
    answers = []

    def answered() -> bool:
        answers.append(connection.call(INIT_PRODUCER_ID, 3, INIT_PRODUCER_ID.Request(
            transactional_id=transactional_id, transaction_timeout_ms=60000)))
        return answers[-1].error_code not in ASKED_AGAIN

    wait_until(answered, 30, "InitProducerId answered")
    assert answers[-1].error_code == ErrorCode.NONE
    return answers[-1].producer_id, answers[-1].producer_epoch


def txn_offset_commit(connection: Connection, transactional_id: str, group: str, producer_id: int,
                      epoch: int) -> set[ErrorCode]:
    """The partition errors of TxnOffsetCommit v3 of offset 1 for every partition of INPUT."""
    Topic = TXN_OFFSET_COMMIT.Request.Topics
    answer = connection.call(TXN_OFFSET_COMMIT, 3, TXN_OFFSET_COMMIT.Request(
        transactional_id=transactional_id, group_id=group, producer_id=producer_id, producer_epoch=epoch,
        topics=[Topic(name=INPUT, partitions=[Topic.Partitions(partition_index=p, committed_offset=1,
                                                               committed_metadata="")
                                              for p in range(PARTITIONS)])]))
    return {p.error_code for t in answer.topics for p in t.partitions}
