"""Several gateways on one mesh form one Kafka cluster (issue 16): a tower, a store, a CHP
server and three gateways, each a process; the clients bootstrap from any gateway."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from gateway.testing.ports import free_port
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.chp.conftest import _free_base_port
from tests.gateway.clients import CLIENTS, Got, Sent
from tests.gateway.groups import wait_until
from tests.gateway.hosts import on_loopback
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acks import start_store
from tests.gateway.test_validation import Connection
from tests.mesh.conftest import fast_config
from tests.mesh.processes import NodeProcess
from tests.protocol.records.bad_batches import good

SESSION_TIMEOUT_MS = 3000
PARTITIONS = 6


class ChpServers:
    """CHP server processes, one per role ("standalone", or "primary" and "backup": a Binary Star
    pair), each on the host `hosts` gives for its log's name (chp, or chp-primary and chp-backup)
    and a free port there. Killed when the block ends."""

    def __init__(self, tmp_path, roles: Sequence[str] = ("standalone",), *options: str, hosts=on_loopback):
        self.tmp_path = tmp_path
        self.roles = roles
        self.options = options
        self.names = ["chp"] if len(roles) == 1 else [f"chp-{role}" for role in roles]
        self.hosts = [hosts(name) for name in self.names]
        self.ports = [_free_base_port() for _ in roles]
        self.processes: list[subprocess.Popen] = []

    @property
    def endpoints(self) -> str:
        """The servers as --chp-servers takes them."""
        return ",".join(f"{host.address}:{port}" for host, port in zip(self.hosts, self.ports, strict=True))

    def log_path(self, index: int):
        return self.tmp_path / f"{self.names[index]}.log"

    def command(self, index: int) -> list[str]:
        host = self.hosts[index]
        command = [*host.prefix, sys.executable, "-m", "gateway.chp.chp_server", "--chp-host", host.address,
                   "--chp-port", str(self.ports[index]), "--chp-role", self.roles[index], *self.options]
        if len(self.ports) == 2:
            peer = 1 - index
            command += ["--chp-peer-host", self.hosts[peer].address, "--chp-peer-port", str(self.ports[peer])]
        return command

    def __enter__(self) -> ChpServers:
        for index, (host, port) in enumerate(zip(self.hosts, self.ports, strict=True)):
            with open(self.log_path(index), "ab") as log:
                self.processes.append(subprocess.Popen(self.command(index), stdout=log, stderr=log))
            wait_until(lambda h=host, p=port: accepts(h.address, p + 2), 30, "the CHP server listens")
        if len(self.ports) == 2:
            wait_until(lambda: "chp.passive_following" in self.log_path(0).read_text(), 30, "the backup follows")
        return self

    def kill(self, index: int) -> None:
        self.processes[index].send_signal(signal.SIGKILL)
        self.processes[index].wait()

    def __exit__(self, *exc_info) -> None:
        for index in range(len(self.processes)):
            self.kill(index)


def chp_server(tmp_path, hosts=on_loopback) -> ChpServers:
    """One CHP server with short heartbeat and expiry intervals."""
    return ChpServers(tmp_path, ("standalone",), "--chp-hugz-interval-ms", "200", "--chp-flush-interval-ms", "200",
                      hosts=hosts)


def accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


@contextmanager
def gateway_cluster(tmp_path, count: int = 3, *options: str, prepare=lambda gateway: None,
                    session_timeout_ms: int = SESSION_TIMEOUT_MS, hosts=on_loopback, stores: str = "a",
                    chp: ChpServers | None = None):
    """`count` gateways (node ids 1..count, the first the controller) on one tower, `stores`
    (named by a letter each) and the `chp` servers (one by default), each given `options` and
    `prepare`d before it starts. Each process runs on the host `hosts` returns for its log's name
    (tower, store-a, chp, gateway-1...)."""
    tower_host = hosts("tower")
    sub, pub = (f"tcp://{tower_host.address}:{free_port()}" for _ in range(2))
    config = fast_config(beacon_sub_address=(sub,), beacon_pub_address=(pub,), tower_sub_address=sub, tower_pub_address=pub)
    tower = NodeProcess.tower(config, tmp_path / "tower.log", tower_host.prefix)
    gateways, started = [], []
    try:
        tower.wait_for_log("event='tower_started'")
        for name in stores:
            host = hosts(f"store-{name}")
            started.append(start_store(replace(config, mesh_bind_host=host.address), tmp_path, name, host.prefix))
        with chp or chp_server(tmp_path, hosts) as servers:
            try:
                for node in range(1, count + 1):
                    host = hosts(f"gateway-{node}")
                    gateway = GatewayProcess(tmp_path / f"gateway-{node}", "--node-id", str(node),
                                             "--chp-servers", servers.endpoints,
                                             "--chp-session-timeout-ms", str(session_timeout_ms),
                                             "--broker-rack", f"rack-{node}", *options, stores=0,
                                             host=host.address, prefix=host.prefix)
                    prepare(gateway)
                    gateway.tower_host = tower_host.address
                    gateway.tower_sub, gateway.tower_pub = (int(a.rsplit(":", 1)[1]) for a in
                                                            (config.tower_sub_address, config.tower_pub_address))
                    gateways.append(gateway.start())
                yield gateways
            finally:  # while CHP serves: a gateway's controlled shutdown goes through it
                for gateway in gateways:
                    gateway.stop()
    finally:
        for gateway in gateways:
            gateway.stop()
        for node in [*started, tower]:
            node.stop()


def metadata(gateway: GatewayProcess, topic: str | None = None):
    return AdminClient({"bootstrap.servers": gateway.bootstrap}).list_topics(topic, timeout=10)


def leaders(gateway: GatewayProcess, topic: str) -> dict[int, int]:
    """Partition -> leader node id, as `gateway` tells (-1 while a partition has none)."""
    described = metadata(gateway, topic).topics[topic]
    return {number: p.leader for number, p in described.partitions.items()}


def spread_over(gateway: GatewayProcess, topic: str, nodes: set[int]) -> bool:
    found = leaders(gateway, topic)
    return len(found) == PARTITIONS and set(found.values()) == nodes


def retention_ms(gateway: GatewayProcess, topic: str) -> str:
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    resource = ConfigResource("topic", topic)
    return admin.describe_configs([resource])[resource].result(30)["retention.ms"].value


def create_topic_through(gateway: GatewayProcess, topic: str) -> None:
    """Created through any gateway: the admin client sends CreateTopics to the controller."""
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


@dataclass(frozen=True)
class Acknowledged:
    value: bytes
    partition: int
    offset: int
    at: float = field(default=0.0, compare=False)  # time.monotonic() when the answer came


def end_offsets(gateway: GatewayProcess, topic: str) -> list[int]:
    """Each partition's high watermark: with retries, the log may hold more records than were
    acknowledged (a batch stored whose answer was lost is sent again), so reading until as
    many as were acknowledged came back could stop short of a partition's end."""
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "unused"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, number), timeout=30)[1]
                for number in range(PARTITIONS)]
    finally:
        consumer.close()


def history_errors(acknowledged: list[Acknowledged], got: list[Got], ends: list[int]) -> str:
    """What the records read contradict, per partition ("" if nothing): offsets other than
    0..end-1 once each, in order; acknowledged records not at the offset their answer named
    (and how many of those were read at another offset)."""
    read = {(g.partition, g.offset): g.value for g in got}
    values = {g.value for g in got}
    lines = []
    for number, end in enumerate(ends):
        offsets = [g.offset for g in got if g.partition == number]
        if offsets != list(range(end)):
            lines.append(f"partition {number}: read {len(offsets)} offsets, {offsets[:1]}..{offsets[-1:]}, "
                         f"not 0..{end - 1} in order")
        acked = [a for a in acknowledged if a.partition == number]
        lost = [a for a in acked if read.get((number, a.offset)) != a.value]
        if lost:
            lines.append(f"partition {number}: {len(lost)} of {len(acked)} acknowledged records not at their "
                         f"offsets {lost[0].offset}..{lost[-1].offset} (e.g. {lost[0]}), "
                         f"{sum(a.value in values for a in lost)} of them read elsewhere")
    return "\n".join(lines)


def leadership_history(gateways: list[GatewayProcess], topic: str) -> str:
    """Every gateway's lines about leading, fencing and losing `topic`'s partitions."""
    events = ("partition_led", "partition_fenced", "partition_takeover_failed", "partition_leadership_lost",
              "partition_deposed", "partition_leader_assigned")
    return "\n".join(f"gateway {node}: {line}" for node, gateway in enumerate(gateways, 1)
                     for line in gateway.log_path.read_text(errors="replace").splitlines()
                     if any(event in line for event in events) and (topic in line or "assigned" in line))


def records(tag: str, count: int) -> list[Sent]:
    return [Sent(value=f"{tag}-{n}".encode(), partition=n % PARTITIONS) for n in range(count)]


def test_gateways_list_each_other_and_spread_partition_leadership(tmp_path):
    with gateway_cluster(tmp_path) as gateways:
        for gateway in gateways:
            wait_until(lambda g=gateway: set(metadata(g).brokers) == {1, 2, 3}, 30, "every gateway listed")
            assert metadata(gateway).controller_id == 1
            admin = AdminClient({"bootstrap.servers": gateway.bootstrap})  # kept until the answer comes
            described = admin.describe_cluster().result(30)
            assert described.controller.id == 1
            assert {(n.id, n.port, n.rack) for n in described.nodes} == {
                (node, g.port, f"rack-{node}") for node, g in enumerate(gateways, 1)}
            assert {(b.host, b.port) for b in metadata(gateway).brokers.values()} == {
                ("127.0.0.1", g.port) for g in gateways}
        create_topic_through(gateways[2], "spread")
        for gateway in gateways:
            wait_until(lambda g=gateway: spread_over(g, "spread", {1, 2, 3}), 30, "partitions led by all three")
        sent = []
        for (name, (produce, _)), gateway in zip(CLIENTS.items(), gateways, strict=True):
            batch = records(name, 30)
            produce(gateway.bootstrap, "spread", batch, acks="all" if name != "kafka-python" else -1)
            sent += batch
        for (name, (_, consume)), gateway in zip(CLIENTS.items(), reversed(gateways), strict=True):
            got = consume(gateway.bootstrap, "spread", list(range(PARTITIONS)), len(sent))
            assert sorted(g.value for g in got) == sorted(s.value for s in sent), name


def test_gateways_send_clients_to_the_leader_and_the_controller(tmp_path):
    """What a client hears from a gateway that does not lead a partition (KIP-951's current
    leader and its endpoint where the version has them), or is not the controller (coordinators:
    test_cluster_coordinators.py)."""
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "routed")
        wait_until(lambda: spread_over(gateways[0], "routed", {1, 2, 3}), 30, "partitions led by all three")
        connection = Connection(gateways[1].port)  # node 2
        try:
            described = connection.call(METADATA, 12, METADATA.Request(topics=[METADATA.Request.Topics(name="routed")]))
            assert {(b.node_id, b.port, b.rack) for b in described.brokers} == {
                (node, g.port, f"rack-{node}") for node, g in enumerate(gateways, 1)}
            assert described.controller_id == 1
            (topic,) = described.topics
            partition = next(p for p in topic.partitions if p.leader_id != 2)
            # every gateway may lead it (the stores hold it), its first leader the preferred one
            assert partition.replica_nodes[0] == partition.leader_id
            assert sorted(partition.replica_nodes) == sorted(partition.isr_nodes) == [1, 2, 3]
            elsewhere = gateways[partition.leader_id - 1]
            number = partition.partition_index
            produced = produce_v12(connection, number)
            assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert produced.responses[0].partition_responses[0].current_leader.leader_id == partition.leader_id
            assert [(e.node_id, e.host, e.port) for e in produced.node_endpoints] == [
                (partition.leader_id, "127.0.0.1", elsewhere.port)]
            older = fetch_v12(connection, number).responses[0].partitions[0]  # a leader, but no endpoints yet
            assert (older.error_code, older.current_leader.leader_id) == (ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                                        partition.leader_id)
            fetched = fetch_v16(connection, topic.topic_id, number)
            answer = fetched.responses[0].partitions[0]
            assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (partition.leader_id, 0)
            assert [e.node_id for e in fetched.node_endpoints] == [partition.leader_id]
            assert partition_errors(connection, number) == [ErrorCode.NOT_LEADER_OR_FOLLOWER] * 3
            # a replica that does not lead stays in its directory, as Kafka's follower does
            # (kafka-python's test_alter_replica_log_dirs asks the first broker DescribeLogDirs names)
            (described_dir,) = connection.call(DESCRIBE_LOG_DIRS, 4, DESCRIBE_LOG_DIRS.Request(topics=None)).results
            moved = connection.call(ALTER_LOG_DIRS, 2, ALTER_LOG_DIRS.Request(dirs=[ALTER_LOG_DIRS.Request.Dirs(
                path=described_dir.log_dir, topics=[ALTER_LOG_DIRS.Request.Dirs.Topics(
                    name="routed", partitions=[number, PARTITIONS])])]))
            assert {(p.partition_index, p.error_code) for p in moved.results[0].partitions} == {
                (number, ErrorCode.NONE), (PARTITIONS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
            created = connection.call(CREATE_TOPICS, 5, CREATE_TOPICS.Request(topics=[
                CREATE_TOPICS.Request.Topics(name="not-here", num_partitions=1, replication_factor=1)]))
            assert created.topics[0].error_code == ErrorCode.NOT_CONTROLLER
        finally:
            connection.close()


def test_each_gateway_describes_the_log_dirs_of_every_replica_it_is(tmp_path):
    """Kafka's broker lists in DescribeLogDirs every replica it hosts, followers too; each gateway
    is a replica of every partition of a topic created while all three ran: it lists them all,
    those it leads with their bytes, those it follows with none (the stores hold them, read only
    by their leader)."""
    from kafka.admin import KafkaAdminClient

    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "hosted")
        wait_until(lambda: spread_over(gateways[0], "hosted", {1, 2, 3}), 30, "partitions led by all three")
        led_by = leaders(gateways[0], "hosted")
        produce, _ = CLIENTS["confluent-kafka"]
        produce(gateways[0].bootstrap, "hosted", [Sent(value=b"v" * 1000, partition=n % PARTITIONS)
                                                  for n in range(5 * PARTITIONS)], acks="all")
        admin = KafkaAdminClient(bootstrap_servers=gateways[1].bootstrap)
        try:
            described = admin.describe_log_dirs(["hosted"])
        finally:
            admin.close()
        assert sorted(answer["broker"] for answer in described) == [1, 2, 3]
        for answer in described:
            ((topic,),) = [directory["topics"] for directory in answer["log_dirs"]]
            sizes = {p["partition_index"]: p["partition_size"] for p in topic["partitions"]}
            assert topic["name"] == "hosted" and sorted(sizes) == list(range(PARTITIONS))
            assert {index for index, size in sizes.items() if size > 5 * 1000} == {
                index for index, node in led_by.items() if node == answer["broker"]}
            assert {index for index, size in sizes.items() if size == 0} == {
                index for index, node in led_by.items() if node != answer["broker"]}
            assert {p["offset_lag"] for p in topic["partitions"]} == {0}


def test_new_partitions_have_leaders_when_the_controller_answers(tmp_path):
    """Kafka's controller answers CreateTopics and CreatePartitions once the records naming the
    new partitions' leaders are committed: its Metadata never shows them leaderless after that
    (kafka-python's test_create_partitions counted the partitions of a fresh topic as none)."""
    with gateway_cluster(tmp_path) as gateways:
        connection = Connection(gateways[0].port)  # the controller
        try:
            created = connection.call(CREATE_TOPICS, 5, CREATE_TOPICS.Request(topics=[CREATE_TOPICS.Request.Topics(
                name="led-at-once", num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=30000))
            assert created.topics[0].error_code == ErrorCode.NONE
            assert leader_errors(connection, "led-at-once") == [ErrorCode.NONE] * PARTITIONS
            grown = connection.call(CREATE_PARTITIONS, 3, CREATE_PARTITIONS.Request(topics=[
                CREATE_PARTITIONS.Request.Topics(name="led-at-once", count=PARTITIONS + 2, assignments=None)], timeout_ms=30000))
            assert grown.results[0].error_code == ErrorCode.NONE
            assert leader_errors(connection, "led-at-once") == [ErrorCode.NONE] * (PARTITIONS + 2)
        finally:
            connection.close()


def test_new_partitions_are_waited_for_at_most_the_request_timeout(tmp_path):
    """Kafka's broker waits for a new topic's (or new partitions') leaders only as long as the
    request's timeout_ms, then answers REQUEST_TIMED_OUT for it, created all the same. 1 ms is too
    short for the controller to assign six leaders through CHP, as it is for Kafka's (its
    CreateTopicsRequestTest asks 1 ms alike)."""
    from kafka.admin import KafkaAdminClient

    with gateway_cluster(tmp_path) as gateways:
        admin = AdminClient({"bootstrap.servers": gateways[0].bootstrap})
        created = admin.create_topics([NewTopic("hurried", PARTITIONS, 1)], operation_timeout=0.001)
        assert timed_out(created["hurried"])
        wait_until(lambda: sorted(leaders(gateways[0], "hurried")) == list(range(PARTITIONS))
                   and -1 not in leaders(gateways[0], "hurried").values(), 30, "the topic's partitions get leaders")
        grown = admin.create_partitions([NewPartitions("hurried", PARTITIONS + 2)], operation_timeout=0.001)
        assert timed_out(grown["hurried"])
        kafka_python = KafkaAdminClient(bootstrap_servers=gateways[1].bootstrap)
        try:
            answer = kafka_python.create_topics({"hurried-too": {"num_partitions": PARTITIONS}}, timeout_ms=1,
                                                raise_errors=False)
            assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
                ("hurried-too", ErrorCode.REQUEST_TIMED_OUT)]
        finally:
            kafka_python.close()
        for topic, count in (("hurried", PARTITIONS + 2), ("hurried-too", PARTITIONS)):
            wait_until(lambda t=topic, c=count: sorted(leaders(gateways[2], t)) == list(range(c))
                       and -1 not in leaders(gateways[2], t).values(), 30, "every new partition gets a leader")


def timed_out(future) -> bool:
    """Whether confluent-kafka's admin future failed with REQUEST_TIMED_OUT."""
    try:
        future.result(30)
    except KafkaException as exc:
        return exc.args[0].code() == KafkaError.REQUEST_TIMED_OUT
    return False


def leader_errors(connection: Connection, topic: str) -> list[int]:
    """Each partition's error in Metadata (LEADER_NOT_AVAILABLE while it has no leader)."""
    described = connection.call(METADATA, 12, METADATA.Request(topics=[METADATA.Request.Topics(name=topic)]))
    partitions = sorted(described.topics[0].partitions, key=lambda p: p.partition_index)
    return [p.error_code if p.leader_id >= 0 else ErrorCode.LEADER_NOT_AVAILABLE for p in partitions]


def test_topics_auto_created_and_deleted_through_any_gateway(tmp_path):
    """A gateway asked to auto-create a topic has the controller create it; partitions added
    and a deletion, sent to the controller, reach every gateway."""
    with gateway_cluster(tmp_path) as gateways:
        produce, _ = CLIENTS["kafka-python"]
        assert produce(gateways[2].bootstrap, "auto", [Sent(value=b"first")], acks=-1) == [0]
        for gateway in gateways:
            wait_until(lambda g=gateway: "auto" in metadata(g).topics, 30, "every gateway knows the topic")
        admin = AdminClient({"bootstrap.servers": gateways[1].bootstrap})
        admin.create_partitions([NewPartitions("auto", 3)])["auto"].result(30)
        for gateway in gateways:
            wait_until(lambda g=gateway: len(leaders(g, "auto")) == 3 and -1 not in leaders(g, "auto").values(), 30,
                       "every gateway knows the new partitions and their leaders")
        change = ConfigResource("topic", "auto", incremental_configs=[
            ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([change])[change].result(30)
        for gateway in gateways:
            wait_until(lambda g=gateway: retention_ms(g, "auto") == "123456", 30, "every gateway has the new config")
        admin.delete_topics(["auto"])["auto"].result(30)
        for gateway in gateways:
            wait_until(lambda g=gateway: "auto" not in metadata(g).topics, 30, "every gateway forgot the topic")


METADATA, PRODUCE, FETCH = by_name("Metadata"), by_name("Produce"), by_name("Fetch")
CREATE_TOPICS, FIND_COORDINATOR = by_name("CreateTopics"), by_name("FindCoordinator")
INIT_PRODUCER_ID = by_name("InitProducerId")
DESCRIBE_LOG_DIRS, ALTER_LOG_DIRS = by_name("DescribeLogDirs"), by_name("AlterReplicaLogDirs")
CREATE_PARTITIONS = by_name("CreatePartitions")
LIST_OFFSETS, DELETE_RECORDS, EPOCHS = by_name("ListOffsets"), by_name("DeleteRecords"), by_name("OffsetForLeaderEpoch")


def produce_v12(connection: Connection, number: int):
    Data = PRODUCE.Request.TopicData
    return connection.call(PRODUCE, 12, PRODUCE.Request(acks=-1, timeout_ms=30000, topic_data=[
        Data(name="routed", partition_data=[Data.PartitionData(index=number, records=good([b"x"]))])]))


def fetch_v12(connection: Connection, number: int):
    Topics = FETCH.Request.Topics
    return connection.call(FETCH, 12, FETCH.Request(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        Topics(topic="routed", partitions=[Topics.Partitions(partition=number, fetch_offset=0,
                                                             partition_max_bytes=1 << 20)])]))


def fetch_v16(connection: Connection, topic_id, number: int):
    Topics = FETCH.Request.Topics
    return connection.call(FETCH, 16, FETCH.Request(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        Topics(topic_id=topic_id, partitions=[Topics.Partitions(partition=number, fetch_offset=0,
                                                                partition_max_bytes=1 << 20)])]))


def partition_errors(connection: Connection, number: int) -> list[int]:
    """The error codes of ListOffsets, DeleteRecords and OffsetForLeaderEpoch for one partition."""
    listed = connection.call(LIST_OFFSETS, 7, LIST_OFFSETS.Request(replica_id=-1, topics=[LIST_OFFSETS.Request.Topics(
        name="routed", partitions=[LIST_OFFSETS.Request.Topics.Partitions(partition_index=number, timestamp=-1)])]))
    deleted = connection.call(DELETE_RECORDS, 2, DELETE_RECORDS.Request(timeout_ms=30000, topics=[
        DELETE_RECORDS.Request.Topics(name="routed", partitions=[
            DELETE_RECORDS.Request.Topics.Partitions(partition_index=number, offset=0)])]))
    epochs = connection.call(EPOCHS, 4, EPOCHS.Request(topics=[EPOCHS.Request.Topics(topic="routed", partitions=[
        EPOCHS.Request.Topics.Partitions(partition=number, leader_epoch=0)])]))
    return [listed.topics[0].partitions[0].error_code, deleted.topics[0].partitions[0].error_code,
            epochs.topics[0].partitions[0].error_code]


def produce_until(bootstrap: str, topic: str, acknowledged: list[Acknowledged], stop: threading.Event,
                  **config) -> None:
    """Produce to every partition in turn until `stop`; what was acknowledged goes to `acknowledged`."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000,
                         **config})

    def delivered(error, message):
        if error is None:
            acknowledged.append(Acknowledged(message.value(), message.partition(), message.offset(), time.monotonic()))

    number = 0
    while not stop.is_set():
        try:
            producer.produce(topic, f"value-{number:08d}".encode(), partition=number % PARTITIONS,
                             on_delivery=delivered)
            number += 1
        except BufferError:
            pass
        producer.poll(0.001)
    assert producer.flush(60) == 0


def consume_until(bootstrap: str, topic: str, got: list[Got], stop: threading.Event) -> None:
    """Read every partition from its start, by assignment, until `stop`; what was read goes to `got`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, number, OFFSET_BEGINNING) for number in range(PARTITIONS)])
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got.append(Got(message.partition(), message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


@pytest.mark.parametrize("victim", [1, 3], ids=["controller", "follower"])
def test_sigkill_of_a_gateway_moves_its_partitions_and_loses_nothing(tmp_path, victim):
    """The controller's death also moves the controller: another gateway takes its journals over."""
    with gateway_cluster(tmp_path) as gateways:
        survivors = [g for node, g in enumerate(gateways, 1) if node != victim]
        live = {1, 2, 3} - {victim}
        create_topic_through(gateways[0], "failover")
        wait_until(lambda: spread_over(gateways[0], "failover", {1, 2, 3}), 30, "partitions led by all three")
        acknowledged: list[Acknowledged] = []
        stop = threading.Event()
        bootstrap = ",".join(g.bootstrap for g in gateways)
        producing = threading.Thread(target=produce_until, args=(bootstrap, "failover", acknowledged, stop))
        producing.start()
        try:
            wait_until(lambda: len(acknowledged) >= 2000, 60, "records acknowledged before the kill")
            gateways[victim - 1].kill()
            killed_at = len(acknowledged)
            for survivor in survivors:
                wait_until(lambda g=survivor: spread_over(g, "failover", live), 30, "its partitions moved")
                assert set(metadata(survivor).brokers) == live
                assert metadata(survivor).controller_id in live
            wait_until(lambda: len(acknowledged) >= killed_at + 2000, 60, "produce goes on after the kill")
        finally:
            stop.set()
            producing.join()
        later = []
        for name, (produce, _) in CLIENTS.items():
            batch = records(name, 12)
            offsets = produce(survivors[0].bootstrap, "failover", batch)
            later += [Acknowledged(s.value, s.partition, offset) for s, offset in zip(batch, offsets, strict=True)]
        ends = end_offsets(survivors[1], "failover")
        for name, (_, consume) in CLIENTS.items():
            got = consume(survivors[1].bootstrap, "failover", list(range(PARTITIONS)), sum(ends))
            errors = history_errors(acknowledged + later, got, ends)
            assert not errors, f"{name}, ends {ends}:\n{errors}\n{leadership_history(gateways, 'failover')}"


def test_idempotent_producers_get_ids_through_any_gateway(tmp_path):
    """Producer ids come from the controller's journal: the other gateways get blocks of them from it."""
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "idempotent")
        wait_until(lambda: spread_over(gateways[0], "idempotent", {1, 2, 3}), 30, "partitions led by all three")
        given = set()
        for gateway in gateways * 2:
            connection = Connection(gateway.port)
            try:
                answer = connection.call(INIT_PRODUCER_ID, 4, INIT_PRODUCER_ID.Request(
                    transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
            finally:
                connection.close()
            assert answer.error_code == ErrorCode.NONE
            given.add(answer.producer_id)
        assert len(given) == 6, "a producer id handed out twice"
        produce, consume = CLIENTS["confluent-kafka"]
        sent = records("idempotent", 60)
        produce(gateways[2].bootstrap, "idempotent", sent, **{"enable.idempotence": True})
        got = consume(gateways[1].bootstrap, "idempotent", list(range(PARTITIONS)), len(sent))
        assert sorted(g.value for g in got) == sorted(s.value for s in sent)


def test_records_deleted_where_a_follower_leads_stay_deleted_after_it_dies(tmp_path):
    """DeleteRecords on a partition a gateway other than the controller leads: the controller
    journals the new log start, so the next leader starts there."""
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "trimmed")
        wait_until(lambda: spread_over(gateways[0], "trimmed", {1, 2, 3}), 30, "partitions led by all three")
        number = next(p for p, leader in leaders(gateways[0], "trimmed").items() if leader == 3)
        produce, consume = CLIENTS["confluent-kafka"]
        produce(gateways[0].bootstrap, "trimmed", [Sent(value=b"%d" % n, partition=number) for n in range(20)])
        admin = AdminClient({"bootstrap.servers": gateways[0].bootstrap})
        (deleted,) = admin.delete_records([TopicPartition("trimmed", number, 10)]).values()
        assert deleted.result(30).low_watermark == 10
        wait_until(lambda: "reported_log_starts_journaled" in gateways[0].log_path.read_text(), 30,
                   "the controller journaled the log start")
        gateways[2].kill()
        wait_until(lambda: spread_over(gateways[0], "trimmed", {1, 2}), 30, "its partitions moved")
        got = consume(gateways[1].bootstrap, "trimmed", [number], 10)
        assert [g.offset for g in got] == list(range(10, 20))
