"""`docker compose up` (compose.yaml): two towers, three stores with a volume each, a CHP server
pair and three gateways with min.insync.replicas=2, served to clients on the host and on the compose
network, durable across store and tower kills and `down`/`up`, empty after `down -v`, serving on
through the kill of the CHP primary and then of a gateway."""

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import kafka
import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compose.cluster import STORES, run
from tests.gateway.clients import (
    CLIENTS,
    TIMEOUT_S,
    Sent,
    confluent_consume,
    confluent_produce,
    kafka_python_produce,
    same_records,
)
from tests.gateway.test_cluster import PARTITIONS
from tests.gateway.traffic import Traffic
from tests.pipeline.windowed_checks import check_batch, create_topics

# The first test also builds the image and starts the cluster: minutes on a clean machine.
pytestmark = pytest.mark.timeout(900)
HERE = Path(__file__).parent
GATEWAYS = ("gateway", "gateway-2", "gateway-3")
BETWEEN_FAULTS = 500  # records produced and read after each fault


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(count: int, partitions: int = 1) -> list[Sent]:
    return [Sent(f"value-{p}-{i}".encode(), key=f"key-{i}".encode(), partition=p)
            for p in range(partitions) for i in range(count)]


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_host_client_produces_and_consumes(cluster, client):
    produce, consume = CLIENTS[client]
    topic, sent = unique(client), records(10)
    produce(cluster.bootstrap, topic, sent, acks="all")
    assert same_records(sent, consume(cluster.bootstrap, topic, [0], len(sent)))


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_on_the_host_produces_and_consumes(cluster):
    topic, lines = unique("kcat"), [f"k{i}:v{i}" for i in range(10)]
    broker = ["kcat", "-b", cluster.bootstrap, "-t", topic]
    subprocess.run([*broker, "-P", "-K:", "-X", "acks=all"], input="\n".join(lines), text=True,
                   check=True, timeout=60)
    out = subprocess.run([*broker, "-C", "-o", "beginning", "-e", "-f", "%k:%s\n"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert out.split() == lines


def test_the_image_holds_the_compiled_parts(cluster):
    """The builder's base has a C compiler: the image's stores receive and its gateways walk
    records through the compiled code, not the Python paths that serve without it."""
    check = ("import gateway.zmq_trio as receive, protocol.records.validation as walk; "
             "assert receive.RECEIVE_COPIES is not None and walk.compiled_walk is not None")
    done = run(["docker", "run", "--rm", "--no-healthcheck", cluster.image, "python3", "-c", check], check=False)
    assert done.returncode == 0, done.stderr


def test_client_container_on_the_compose_network(cluster):
    """The project's image runs kafka-python (pure Python, mounted from the host) against the
    listener advertised as gateway:29092 for containers on the compose network."""
    name, value = f"{cluster.project}-client", unique("in-network")
    command = ["docker", "run", "--rm", "--name", name, "--network", cluster.network(), "--no-healthcheck",
               "-v", f"{Path(kafka.__file__).parent}:/clients/kafka:ro",
               "-v", f"{HERE / 'network_client.py'}:/clients/network_client.py:ro",
               "-e", "PYTHONPATH=/clients", "-e", "PYTHONDONTWRITEBYTECODE=1",
               cluster.image, "python3", "/clients/network_client.py", "gateway:29092", unique("network"), value]
    try:
        done = run(command, check=False)
    finally:
        run(["docker", "rm", "--force", name], check=False)  # a client the test's timeout cut short
    assert done.returncode == 0, done.stderr


def test_pipeline_runs_on_the_compose_cluster(cluster, spark):
    """The windowed-counts pipeline (pipelines/) with its data on the cluster, reached from the
    host as pipelines/README.md says: localhost and the published port."""
    create_topics(cluster.bootstrap)
    check_batch(spark, cluster.bootstrap)


def test_acks_all_outlives_any_one_store_that_then_catches_up(cluster):
    """Each store in turn is killed: acks=all is still answered by the other two (2 of 3 in
    sync), and the store, started again, stores what it missed. The next store's kill needs
    it: the next produce is answered only once the one started again has acknowledged it."""
    topic = unique("store-kill")
    for store in STORES:
        store_catches_up(cluster, store, topic)


def test_either_tower_killed_costs_neither_clients_nor_discovery(cluster):
    """Each tower in turn is killed: a client produces and consumes, and a store killed and started
    again meanwhile, which only the other tower can introduce to the mesh, catches up on what it
    missed. The first tower is started again before the second's kill: it is used again."""
    for tower, store in (("tower", "store-1"), ("tower-2", "store-2")):
        kill(cluster, tower)
        topic, sent = unique(f"without-{tower}"), records(5)
        kafka_python_produce(cluster.bootstrap, topic, sent, acks="all")
        assert same_records(sent, confluent_consume(cluster.bootstrap, topic, [0], len(sent)))
        store_catches_up(cluster, store, topic)
        start(cluster, tower)


def test_down_and_up_keep_topics_offsets_and_records(cluster):
    topic, group, sent = unique("durable"), unique("group"), records(5, partitions=3)
    create_topic(cluster.bootstrap, topic, partitions=3)
    confluent_produce(cluster.bootstrap, topic, sent, acks="all")
    committed = {0: 1, 1: 3, 2: 5}
    commit(cluster.bootstrap, group, topic, committed)

    cluster.down(volumes=False)
    cluster.up()

    assert len(admin(cluster.bootstrap).list_topics(timeout=TIMEOUT_S).topics[topic].partitions) == 3
    assert committed_offsets(cluster.bootstrap, group, topic, 3) == committed
    assert same_records(sent, confluent_consume(cluster.bootstrap, topic, [0, 1, 2], len(sent)))


def test_down_with_volumes_starts_empty(cluster):
    topic, group = unique("forgotten"), unique("group")
    confluent_produce(cluster.bootstrap, topic, records(1), acks="all")
    commit(cluster.bootstrap, group, topic, {0: 1})

    cluster.down(volumes=True)
    cluster.up()

    client = admin(cluster.bootstrap)
    assert client.list_topics(timeout=TIMEOUT_S).topics == {}
    assert client.list_consumer_groups(request_timeout=TIMEOUT_S).result().valid == []


def test_cluster_outlives_the_chp_primary_and_then_a_gateway(cluster):
    """docker kill of the CHP primary: every gateway moves to the backup while a client goes on
    producing and reading; then of gateway-3: its partitions move to the other two (Metadata's
    leaders) and the client goes on. Both started again, the primary follows the backup, and
    gateway-3 leads its preferred partitions again once ElectLeaders moves them back (the auto
    rebalance would, after leader.imbalance.check.interval.seconds)."""
    topic = unique("chp-pair")
    create_topic(cluster.bootstrap, topic, partitions=PARTITIONS)
    wait_until(lambda: set(leaders(cluster.bootstrap, topic)) == {1, 2, 3}, "partitions led by all three")
    with Traffic(cluster.bootstraps, topic) as traffic:
        traffic.carries_on(BETWEEN_FAULTS, TIMEOUT_S, "before the faults")
        cluster.compose("kill", "chp")
        for gateway in GATEWAYS:
            wait_until(lambda gateway=gateway: "event='chp.synced' server=('chp-backup', 7000)" in cluster.log(gateway),
                       f"{gateway} to follow the CHP backup")
        traffic.carries_on(BETWEEN_FAULTS, TIMEOUT_S, "on the CHP backup")
        cluster.compose("kill", "gateway-3")
        wait_until(lambda: set(leaders(cluster.bootstrap, topic)) == {1, 2}, "gateway-3's partitions to move")
        traffic.carries_on(BETWEEN_FAULTS, TIMEOUT_S, "without gateway-3")
        cluster.compose("start", "chp", "gateway-3")
        cluster.wait_healthy("chp", "gateway-3")
        wait_until(lambda: "event='chp.synced_with_active'" in cluster.log("chp"), "the primary to follow the backup")
        wait_until(lambda: 3 in admin(cluster.bootstrap).list_topics(timeout=TIMEOUT_S).brokers, "gateway-3 to rejoin")
        partitions = [TopicPartition(topic, number) for number in range(PARTITIONS)]
        client = admin(cluster.bootstrap)  # referenced until the answer
        elected = client.elect_leaders(ElectionType.PREFERRED, partitions).result(TIMEOUT_S)
        assert all(error is None or error.code() == KafkaError.ELECTION_NOT_NEEDED for error in elected.values())
        wait_until(lambda: set(leaders(cluster.bootstrap, topic)) == {1, 2, 3}, "gateway-3 to lead partitions again")
        traffic.carries_on(BETWEEN_FAULTS, TIMEOUT_S, "both started again")
        traffic.read_back(TIMEOUT_S)
    errors = traffic.errors()
    assert not errors, errors


def wait_until(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout}s for {what}"
        time.sleep(0.2)


def kill(cluster, service: str) -> None:
    cluster.compose("kill", service)
    wait_until(lambda: cluster.state(service)["Status"] == "exited", f"{service} to exit")


def start(cluster, service: str) -> None:
    cluster.compose("start", service)
    cluster.wait_healthy(service)


def store_catches_up(cluster, store: str, topic: str) -> None:
    """`store` killed, a record produced without it with acks=all, the store started again:
    until it has stored that record."""
    kill(cluster, store)
    value = unique(f"without-{store}")
    kafka_python_produce(cluster.bootstrap, topic, [Sent(value.encode())], acks="all")
    start(cluster, store)
    wait_until(lambda: stored(cluster, store, value), f"{store} to store {value}")


def stored(cluster, store: str, value: str) -> bool:
    """Whether the store's log holds the value (records are stored as produced: uncompressed)."""
    return cluster.exec(store, "grep", "-rqF", value, "/data/log").returncode == 0


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    client = admin(bootstrap)  # referenced until the answer: a client collected cancels its requests
    (future,) = client.create_topics([NewTopic(topic, partitions)]).values()
    future.result(TIMEOUT_S)


def leaders(bootstrap: str, topic: str) -> set[int]:
    """The node ids leading the topic's partitions, as Metadata tells (-1: a partition without one)."""
    described = admin(bootstrap).list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    return {partition.leader for partition in described.partitions.values()}


def group_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = group_consumer(bootstrap, group)
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = group_consumer(bootstrap, group)
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT_S)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()
