"""Coordinators in a cluster (issue 16, item 4): a group's (a transactional id's) coordinator is the
leader of its __consumer_offsets (__transaction_state) partition; its state lives in that partition
and moves with it when the coordinator dies."""

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from protocol.kafka.apis import by_name
from protocol.kafka.coordinator_records import coordinator_partition
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import CLIENTS, Sent
from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import (
    PARTITIONS,
    create_topic_through,
    gateway_cluster,
    leaders,
    spread_over,
)
from tests.gateway.test_validation import Connection

FIND_COORDINATOR, HEARTBEAT = by_name("FindCoordinator"), by_name("Heartbeat")
OFFSETS, TRANSACTIONS = "__consumer_offsets", "__transaction_state"
GROUPS = [f"group-{n}" for n in range(12)]
GROUP, TRANSACTION = 0, 1  # FindCoordinator's key types


def coordinators(gateway, keys: list[str], key_type: int = GROUP) -> dict[str, int] | None:
    """Key -> coordinator node id, as FindCoordinator v4 on `gateway` answers; None while any has none."""
    connection = Connection(gateway.port)
    try:
        found = connection.call(FIND_COORDINATOR, 4, FIND_COORDINATOR.Request(key_type=key_type, coordinator_keys=keys))
    finally:
        connection.close()
    if any(c.error_code != ErrorCode.NONE for c in found.coordinators):
        return None
    return {c.key: c.node_id for c in found.coordinators}


def found_coordinators(gateway, keys: list[str], key_type: int = GROUP) -> dict[str, int]:
    found = {}
    wait_until(lambda: found.update(coordinators(gateway, keys, key_type) or {}) or len(found) == len(keys), 30,
               "every key has a coordinator")
    return found


def known_leaders(gateway, topic: str) -> dict[int, int]:
    """Partition -> leader of an internal topic as `gateway` tells, once it knows every one: it learns
    them through CHP a little after the gateway whose FindCoordinator made the topic."""
    known: dict[int, int] = {}

    def every_one() -> bool:
        known.update(leaders(gateway, topic))
        return len(known) == 50 and -1 not in known.values()

    wait_until(every_one, 30, f"every {topic} leader known")
    return known


def heartbeat_error(gateway, group: str) -> ErrorCode:
    connection = Connection(gateway.port)
    try:
        answer = connection.call(HEARTBEAT, 4, HEARTBEAT.Request(group_id=group, generation_id=1, member_id="m"))
    finally:
        connection.close()
    return answer.error_code


def committed(gateway, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": group})
    try:
        wanted = [TopicPartition(topic, number) for number in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(wanted, timeout=30)}
    finally:
        consumer.close()


def test_coordinators_spread_over_the_gateways_and_each_keeps_its_commits_until_their_topic_goes(tmp_path):
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "committed")
        wait_until(lambda: spread_over(gateways[0], "committed", {1, 2, 3}), 30, "partitions led by all three")
        found = found_coordinators(gateways[1], GROUPS)
        owners = known_leaders(gateways[2], OFFSETS)
        assert found == {group: owners[coordinator_partition(group, 50)] for group in GROUPS}
        assert set(found.values()) == {1, 2, 3}, "groups coordinated by every gateway"
        transactional = found_coordinators(gateways[2], GROUPS, TRANSACTION)
        owners = known_leaders(gateways[0], TRANSACTIONS)
        assert transactional == {key: owners[coordinator_partition(key, 50)] for key in GROUPS}
        assert set(transactional.values()) == {1, 2, 3}, "transactional ids coordinated by every gateway"
        for group, node in found.items():
            elsewhere = gateways[node % 3]  # a gateway that is not the coordinator
            assert heartbeat_error(elsewhere, group) == ErrorCode.NOT_COORDINATOR
        for number, group in enumerate(GROUPS):
            consumer = Consumer({"bootstrap.servers": gateways[number % 3].bootstrap, "group.id": group,
                                 "enable.auto.commit": False})
            try:
                consumer.commit(offsets=[TopicPartition("committed", 0, number + 1)], asynchronous=False)
            finally:
                consumer.close()
        for number, group in enumerate(GROUPS):
            assert committed(gateways[(number + 1) % 3], group, "committed")[0] == number + 1
        # As in Kafka, every coordinator removes a deleted topic's offsets.
        admin = AdminClient({"bootstrap.servers": gateways[1].bootstrap})
        admin.delete_topics(["committed"])["committed"].result(30)
        for number, group in enumerate(GROUPS):
            wait_until(lambda g=group, n=number: committed(gateways[n % 3], g, "committed")[0] < 0, 30,
                       f"{group}'s offsets of the deleted topic removed")


@pytest.mark.parametrize("victim", [3, 1], ids=["follower", "controller"])
def test_a_group_keeps_its_commits_and_consumes_on_when_its_coordinator_is_killed(tmp_path, victim):
    """kill -9 of the coordinator: another gateway leads the partition, replays it and coordinates
    the group; the member carries on, nothing committed before the kill is read twice, nothing lost.
    The controller's death moves the controller first, which then moves the partition."""
    produce, _ = CLIENTS["confluent-kafka"]
    with gateway_cluster(tmp_path) as gateways:
        survivor = gateways[1]  # node 2, never the victim
        create_topic_through(survivor, "resumed")
        wait_until(lambda: spread_over(survivor, "resumed", {1, 2, 3}), 30, "partitions led by all three")
        candidates = [f"resumed-{n}" for n in range(20)]
        group = next(g for g, node in found_coordinators(survivor, candidates).items() if node == victim)
        sent = [Sent(value=b"%d" % n, partition=n % PARTITIONS) for n in range(600)]
        produce(survivor.bootstrap, "resumed", sent)
        consumer = Consumer({"bootstrap.servers": survivor.bootstrap, "group.id": group,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        consumer.subscribe(["resumed"])
        seen: list[tuple[int, int]] = []
        try:
            consume_and_commit(consumer, seen, 300)
            before = committed_positions(seen)
            gateways[victim - 1].kill()
            consume_and_commit(consumer, seen, len(sent))
        finally:
            consumer.close()
        assert len(set(seen)) == len(sent), "every record consumed"
        again = [record for record in seen if seen.count(record) > 1]
        assert all(offset >= before.get(partition, 0) for partition, offset in again), \
            "a record committed before the kill was read again"
        wait_until(lambda: committed(survivor, group, "resumed") == {p: 100 for p in range(PARTITIONS)}, 30,
                   "the commits made after the kill are the group's")


def consume_and_commit(consumer: Consumer, seen: list[tuple[int, int]], until: int) -> None:
    """Poll until `until` distinct records were seen, committing what was read every few records."""
    since_commit = 0
    while len(set(seen)) < until or since_commit:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.partition(), message.offset()))
            since_commit += 1
        if since_commit >= 25 or (since_commit and len(set(seen)) >= until):  # the last ones too
            try:
                consumer.commit(asynchronous=False)
                since_commit = 0
            except KafkaException:
                pass  # the coordinator is moving: commit again with the next records


def committed_positions(seen: list[tuple[int, int]]) -> dict[int, int]:
    """Partition -> the offset after the last record seen, all of which were committed."""
    positions: dict[int, int] = {}
    for partition, offset in seen:
        positions[partition] = max(positions.get(partition, 0), offset + 1)
    return positions


@pytest.mark.parametrize("victim", [3, 1], ids=["follower", "controller"])
def test_a_transactional_producer_whose_coordinator_is_killed_sees_commit_or_abort_never_half(tmp_path, victim):
    """The coordinator killed mid-run: the gateway that leads its __transaction_state partition next
    replays it, completes what was prepared and aborts what timed out; markers reach every
    partition's leader. A read_committed consumer sees every transaction whole or not at all."""
    with gateway_cluster(tmp_path, 3, "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500") \
            as gateways:
        survivor = gateways[1]  # node 2, never the victim
        create_topic_through(survivor, "txn")
        wait_until(lambda: spread_over(survivor, "txn", {1, 2, 3}), 30, "partitions led by all three")
        candidates = [f"killed-coordinator-{n}" for n in range(20)]
        transactional_id = next(key for key, node in found_coordinators(survivor, candidates, TRANSACTION).items()
                                if node == victim)
        committed_txns: list[int] = []
        stop = threading.Event()
        producing = threading.Thread(target=transactions_until, args=(survivor, transactional_id, committed_txns, stop))
        producing.start()
        try:
            wait_until(lambda: len(committed_txns) >= 10, 60, "transactions committed before the kill")
            gateways[victim - 1].kill()
            killed_at = len(committed_txns)
            wait_until(lambda: len(committed_txns) >= killed_at + 10, 90, "transactions committed after the kill")
        finally:
            stop.set()
            producing.join()
        final = committed_txns[-1]  # the last one committed: read up to it on every partition
        whole = read_committed_until(survivor, final)
        assert set(committed_txns) <= set(whole), "a committed transaction is missing"
        assert all(count == PARTITIONS for count in whole.values()), \
            f"half a transaction visible: {[t for t, c in whole.items() if c != PARTITIONS]}"


def transactions_until(gateway, transactional_id: str, committed_txns: list[int], stop: threading.Event) -> None:
    """Transactions of one record per partition, numbered, until `stop`; a failed one is aborted, or
    its producer replaced (which fences and aborts it) when the failure is fatal."""
    producer, number = transactional_producer(gateway, transactional_id), 0
    while not stop.is_set():
        number += 1
        try:
            producer.begin_transaction()
            for partition in range(PARTITIONS):
                producer.produce("txn", value=b"%d" % number, partition=partition)
            producer.commit_transaction(30)
            committed_txns.append(number)
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                try:
                    producer.abort_transaction(30)
                    continue
                except KafkaException:
                    pass
            producer = transactional_producer(gateway, transactional_id)


def transactional_producer(gateway, transactional_id: str) -> Producer:
    while True:
        producer = Producer({"bootstrap.servers": gateway.bootstrap, "transactional.id": transactional_id,
                             "transaction.timeout.ms": 5000})
        try:
            producer.init_transactions(30)
            return producer
        except KafkaException:
            continue  # no coordinator yet: a new producer asks again


def read_committed_until(gateway, final: int) -> dict[int, int]:
    """Transaction number -> records a read_committed consumer sees, read on every partition up to
    the record of transaction `final`."""
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "txn-check",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("txn", partition, 0) for partition in range(PARTITIONS)])
    seen: dict[int, int] = {}
    reached: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(reached) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                number = int(message.value())
                seen[number] = seen.get(number, 0) + 1
                if number == final:
                    reached.add(message.partition())
    finally:
        consumer.close()
    assert len(reached) == PARTITIONS, "the last committed transaction is not readable on every partition"
    return seen
