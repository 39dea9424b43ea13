"""Several gateways on one mesh form one Kafka cluster (issue 16): a tower, a store, a CHP
server and three gateways, each a process; the clients bootstrap from any gateway."""

import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.chp.conftest import _free_base_port
from tests.gateway.clients import CLIENTS, Sent
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acks import start_store
from tests.mesh.conftest import fast_config
from tests.mesh.processes import NodeProcess

SESSION_TIMEOUT_MS = 3000
PARTITIONS = 6


@contextmanager
def chp_server(tmp_path):
    port = _free_base_port()
    with open(tmp_path / "chp.log", "ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "gateway.chp.chp_server", "--chp-host", "127.0.0.1",
                                    "--chp-port", str(port), "--chp-hugz-interval-ms", "200",
                                    "--chp-flush-interval-ms", "200"], stdout=log, stderr=log)
    try:
        wait_until(lambda: accepts(port + 2), 30, "the CHP server listens")
        yield port
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@contextmanager
def gateway_cluster(tmp_path, count: int = 3):
    """`count` gateways (node ids 1..count, the first the controller) on one tower and store."""
    config = fast_config()
    tower = NodeProcess.tower(config, tmp_path / "tower.log")
    gateways, store = [], None
    try:
        tower.wait_for_log("event='tower_started'")
        store = start_store(config, tmp_path, "a")
        with chp_server(tmp_path) as chp_port:
            for node in range(1, count + 1):
                gateway = GatewayProcess(tmp_path / f"gateway-{node}", "--node-id", str(node),
                                         "--chp-servers", f"127.0.0.1:{chp_port}",
                                         "--chp-session-timeout-ms", str(SESSION_TIMEOUT_MS), stores=0)
                gateway.tower_sub, gateway.tower_pub = (int(a.rsplit(":", 1)[1]) for a in
                                                        (config.tower_sub_address, config.tower_pub_address))
                gateways.append(gateway.start())
            yield gateways
            for gateway in gateways:
                gateway.stop()
    finally:
        for gateway in gateways:
            gateway.stop()
        for node in [store, tower]:
            if node is not None:
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


def create_topic_through(gateway: GatewayProcess, topic: str) -> None:
    """Created through any gateway: the admin client sends CreateTopics to the controller."""
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def records(tag: str, count: int) -> list[Sent]:
    return [Sent(value=f"{tag}-{n}".encode(), partition=n % PARTITIONS) for n in range(count)]


def test_gateways_list_each_other_and_spread_partition_leadership(tmp_path):
    with gateway_cluster(tmp_path) as gateways:
        for gateway in gateways:
            wait_until(lambda g=gateway: set(metadata(g).brokers) == {1, 2, 3}, 30, "every gateway listed")
            assert metadata(gateway).controller_id == 1
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


def produce_until(gateway: GatewayProcess, topic: str, acknowledged: list[bytes], stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": 60000})

    def delivered(error, message):
        if error is None:
            acknowledged.append(message.value())

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


@pytest.mark.parametrize("victim", [2])  # a gateway that is not the controller
def test_sigkill_of_a_gateway_moves_its_partitions_and_loses_nothing(tmp_path, victim):
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], "failover")
        wait_until(lambda: spread_over(gateways[0], "failover", {1, 2, 3}), 30, "partitions led by all three")
        acknowledged: list[bytes] = []
        stop = threading.Event()
        producing = threading.Thread(target=produce_until, args=(gateways[0], "failover", acknowledged, stop))
        producing.start()
        try:
            wait_until(lambda: len(acknowledged) >= 2000, 60, "records acknowledged before the kill")
            gateways[victim].kill()
            killed_at = len(acknowledged)
            survivor = gateways[0]
            wait_until(lambda: spread_over(survivor, "failover", {1, 2}), 30, "its partitions moved")
            assert set(metadata(survivor).brokers) == {1, 2}
            wait_until(lambda: len(acknowledged) >= killed_at + 2000, 60, "produce goes on after the kill")
        finally:
            stop.set()
            producing.join()
        later = []
        for name, (produce, _) in CLIENTS.items():
            batch = records(name, 12)
            produce(gateways[1].bootstrap, "failover", batch)
            later += [s.value for s in batch]
        for name, (_, consume) in CLIENTS.items():
            got = {g.value for g in consume(gateways[1].bootstrap, "failover", list(range(PARTITIONS)),
                                            len(acknowledged) + len(later))}
            missing = set(acknowledged + later) - got
            assert not missing, f"{name}: {len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
