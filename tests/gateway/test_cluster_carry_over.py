"""A lone gateway started again as the first member of a cluster keeps its groups' committed offsets and
its transactional ids: the controller carries the lone journals over to the coordinators' partitions, once;
alone again, the gateway starts with no groups rather than the stale ones."""

from __future__ import annotations

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.groups import assert_resumes_at, create_topic, produce, wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_cluster import chp_server
from tests.gateway.test_validation import Connection

DESCRIBE_TRANSACTIONS = by_name("DescribeTransactions")
PARTITIONS = 3
TOPIC, GROUP, TRANSACTIONAL_ID = "carried", "carried-group", "carried-producer"


def test_lone_groups_and_transactions_carried_over_to_a_cluster(tmp_path):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata

    gateway = GatewayProcess(tmp_path / "gateway").start()
    create_topic(gateway.bootstrap, TOPIC, PARTITIONS)
    produce(gateway.bootstrap, TOPIC, [f"v{n}" for n in range(30)], PARTITIONS)
    committer = KafkaConsumer(bootstrap_servers=gateway.bootstrap, group_id=GROUP, enable_auto_commit=False)
    committer.commit({KafkaTopicPartition(TOPIC, p): OffsetAndMetadata(3 + p, f"meta-{p}", -1)
                      for p in range(PARTITIONS)})
    committer.close()
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "transactional.id": TRANSACTIONAL_ID})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, b"in a transaction", partition=0)
    producer.commit_transaction(30)
    wait_until(lambda: _producer_of(gateway)[2] == "CompleteCommit", 30, "the markers written")
    lone_producer = _producer_of(gateway)
    del producer
    gateway.stop()

    lone_options = gateway.options
    with chp_server(tmp_path) as servers:
        gateway.options = (*lone_options, "--node-id", "1", "--chp-servers", servers.endpoints)
        gateway.start()
        _assert_resumes(gateway)
        wait_until(lambda: _producer_of(gateway) is not None, 30, "the transactional id's coordinator")
        assert _producer_of(gateway) == lone_producer
        gateway.stop()
        assert gateway.log_path.read_text().count("lone_journal_carried_over") == 2  # groups, transactions

        gateway.start()  # the lone journals are closed: nothing carried again, the offsets still there
        _assert_resumes(gateway)
        gateway.stop()
        assert gateway.log_path.read_text().count("lone_journal_carried_over") == 2

    gateway.options = lone_options  # alone again: the groups are the cluster's, the lone journal's are stale
    gateway.start()
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": GROUP})
    try:
        wanted = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        assert {tp.offset for tp in consumer.committed(wanted, timeout=30)} == {OFFSET_INVALID}
    finally:
        consumer.close()
    gateway.stop()


def _assert_resumes(gateway) -> None:
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    try:
        committed: list[TopicPartition] = []
        wait_until(lambda: _committed(consumer, committed), 30, "the group's coordinator")
        assert [(tp.offset, tp.metadata) for tp in committed] == [(3 + p, f"meta-{p}") for p in range(PARTITIONS)]
        assert_resumes_at(consumer, TOPIC, {p: 3 + p for p in range(PARTITIONS)})
    finally:
        consumer.close()


def _committed(consumer, committed: list[TopicPartition]) -> bool:
    """Whether the group's coordinator answered (a restarted cluster's takes its partition over first)."""
    try:
        committed[:] = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() not in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS):
            raise
        return False
    return True


def _producer_of(gateway) -> tuple[int, int, str] | None:
    """The transactional id's producer id, epoch and state, as its coordinator describes them."""
    connection = Connection(gateway.port)
    try:
        state, = connection.call(DESCRIBE_TRANSACTIONS, 0, DESCRIBE_TRANSACTIONS.Request(
            transactional_ids=[TRANSACTIONAL_ID])).transaction_states
    finally:
        connection.close()
    if state.error_code != ErrorCode.NONE:
        return None
    return state.producer_id, state.producer_epoch, state.transaction_state
