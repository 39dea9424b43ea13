"""The groups and transactions journals compact into generations; a crash after compactions loses nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gateway.admin import create_topic
from tests.gateway.clients import confluent_consume
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_transactions import RECORDS
from tests.gateway.test_transactions import _confluent_transactions as confluent_transactions

THRESHOLD = 20  # entries written since a snapshot that compact a journal
PARTITIONS = 3
COMMITS = 150
TRANSACTIONS = 12


@pytest.fixture
def compacting_gateway(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--journal-compaction-entries", str(THRESHOLD)).start()
    yield server
    server.stop()


def events(text: str, event: str, **fields: str) -> list[dict[str, str]]:
    """The key=value fields of each logged `event` whose fields include `fields`."""
    found = []
    for line in text.splitlines():
        values = dict(re.findall(r"(\w+)=('[^']*'|\S+)", line))
        values = {key: value.strip("'") for key, value in values.items()}
        if values.get("event") == event and all(values.get(k) == v for k, v in fields.items()):
            found.append(values)
    return found


def crash_and_restart(gateway: GatewayProcess) -> str:
    """SIGKILL the gateway, start it again; what it logged at this start."""
    gateway.kill()
    before = gateway.log_path.stat().st_size
    gateway.start()
    return gateway.log_path.read_text(errors="replace")[before:]


def assert_replayed_compacted(log: str, kind: str) -> None:
    replayed, = events(log, "journal_replayed", subject=f"__dafka_gateway_{kind}")
    assert int(replayed["generation"]) > 0
    assert int(replayed["entries"]) <= 2 * THRESHOLD


def commit_offsets(bootstrap: str, topic: str, group: str) -> list[tuple[int, str]]:
    """COMMITS offset commits spread over the topic's partitions; the last (offset, metadata) of each."""
    from confluent_kafka import Consumer, TopicPartition

    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        for n in range(COMMITS):
            committer.commit(offsets=[TopicPartition(topic, n % PARTITIONS, n, metadata=f"commit-{n}")],
                             asynchronous=False)
    finally:
        committer.close()
    last = [max(n for n in range(COMMITS) if n % PARTITIONS == p) for p in range(PARTITIONS)]
    return [(n, f"commit-{n}") for n in last]


def committed_offsets(bootstrap: str, topic: str, group: str) -> list[tuple[int, str]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    return [(tp.offset, tp.metadata) for tp in committed]


def test_committed_offsets_survive_compactions_and_a_crash(compacting_gateway):
    gateway, topic, group = compacting_gateway, "compacted-offsets", "compacted"
    create_topic(gateway.bootstrap, topic, PARTITIONS)
    last = commit_offsets(gateway.bootstrap, topic, group)
    compactions = events(gateway.log_path.read_text(), "journal_compacted", kind="groups")
    assert len(compactions) >= COMMITS // THRESHOLD - 1

    log = crash_and_restart(gateway)

    assert_replayed_compacted(log, "groups")
    assert committed_offsets(gateway.bootstrap, topic, group) == last


def subject_directory(data_dir: Path, subject: str) -> Path:
    return data_dir / "store-0" / "log" / ("s-" + subject.encode().hex())


def holding(data_dir: Path, subject: str) -> set[str]:
    """The addresses of the subject's partitions whose segment files on store 0 hold entries."""
    return {partition.name for partition in subject_directory(data_dir, subject).iterdir()
            if any(size(segment) for segment in partition.glob("*.log"))}


def size(segment: Path) -> int:
    """A segment's size; the store may replace or remove it between the listing and the look."""
    try:
        return segment.stat().st_size
    except FileNotFoundError:
        return 0


def test_older_generations_and_deleted_topics_leave_the_stores(tmp_path):
    from confluent_kafka.admin import AdminClient

    from tests.gateway.clients import Sent, confluent_produce

    gateway = GatewayProcess(tmp_path / "gateway", "--journal-compaction-entries", str(THRESHOLD),
                             "--store-segment-bytes", "1024").start()
    groups = "__dafka_gateway_groups"
    try:
        create_topic(gateway.bootstrap, "doomed", PARTITIONS)
        confluent_produce(gateway.bootstrap, "doomed", [Sent(bytes(300)) for _ in range(30)])
        assert holding(gateway.data_dir, "doomed")
        admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
        admin.delete_topics(["doomed"])["doomed"].result(30)
        doomed = subject_directory(gateway.data_dir, "doomed")
        wait_until(lambda: not doomed.exists(), 20, "the deleted topic's partitions deleted")

        create_topic(gateway.bootstrap, "offsets", PARTITIONS)
        last = commit_offsets(gateway.bootstrap, "offsets", "g")
        generations = (gateway.data_dir / "store-0" / "log" / ("s-" + groups.encode().hex())).iterdir()
        assert len(list(generations)) >= COMMITS // THRESHOLD - 1
        wait_until(lambda: len(holding(gateway.data_dir, groups)) == 1, 20, "older generations emptied")

        log = crash_and_restart(gateway)

        replayed, = events(log, "journal_replayed", subject=groups)
        assert holding(gateway.data_dir, groups) == {replayed["uuid"]}
        assert committed_offsets(gateway.bootstrap, "offsets", "g") == last
        assert not doomed.exists()
    finally:
        gateway.stop()


def test_transactions_survive_compactions_and_a_crash(compacting_gateway):
    gateway, topic = compacting_gateway, "compacted-transactions"
    create_topic(gateway.bootstrap, topic, partitions=2)
    outcomes = [n % 3 != 1 for n in range(TRANSACTIONS)]
    confluent_transactions(gateway.bootstrap, topic, "compacted-tid", outcomes)
    assert events(gateway.log_path.read_text(), "journal_compacted", kind="transactions")

    log = crash_and_restart(gateway)

    assert_replayed_compacted(log, "transactions")
    after = confluent_transactions(gateway.bootstrap, topic, "compacted-tid", [True])  # init_transactions takes the id
    after.flush(30)
    committed = [f"{n}-{i}-commit" for n, commit in enumerate(outcomes) if commit for i in range(RECORDS)]
    committed += [f"0-{i}-commit" for i in range(RECORDS)]
    # An aborted transaction lies between committed ones: a leak would show among the first records.
    got = confluent_consume(gateway.bootstrap, topic, [0, 1], len(committed), **{"isolation.level": "read_committed"})
    assert sorted(m.value.decode() for m in got) == sorted(committed)


def test_topic_metadata_survives_compactions_and_a_crash(compacting_gateway):
    """Configs changed many times, a deleted topic, producer ids: after compactions and a crash
    the last state is back, the deleted topic stays deleted (its partitions, emptied but still
    among the stores' heads, do not come back as native ones) and producer ids keep growing."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    from tests.gateway.clients import Sent, confluent_produce

    gateway = compacting_gateway
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    create_topic(gateway.bootstrap, "doomed")
    confluent_produce(gateway.bootstrap, "doomed", [Sent(b"gone with the topic")])
    admin.delete_topics(["doomed"])["doomed"].result(30)
    create_topic(gateway.bootstrap, "kept", partitions=2)
    resource = ConfigResource(ResourceType.TOPIC, "kept")
    for n in range(2 * THRESHOLD + 5):
        resource.set_config("retention.ms", str(3_600_000 + n))
        admin.alter_configs([resource])[resource].result(30)
    before = idempotent_producer_id(gateway.bootstrap)
    assert events(gateway.log_path.read_text(), "journal_compacted", kind="metadata")

    log = crash_and_restart(gateway)

    assert_replayed_compacted(log, "metadata")
    topics = AdminClient({"bootstrap.servers": gateway.bootstrap}).list_topics(timeout=30).topics
    assert "doomed" not in topics and len(topics["kept"].partitions) == 2
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == str(3_600_000 + 2 * THRESHOLD + 4)
    assert idempotent_producer_id(gateway.bootstrap) > before


def idempotent_producer_id(bootstrap: str) -> int:
    """The producer id the gateway gives a new idempotent producer (kafka-python shows it)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    try:
        producer.send("kept", b"x").get(30)
        return producer._transaction_manager.producer_id_and_epoch.producer_id
    finally:
        producer.close(10)
