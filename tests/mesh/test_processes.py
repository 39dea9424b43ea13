"""The mesh as real processes on 127.0.0.1: tower, two stores, producers, consumers."""

import signal
import subprocess
import threading
import time

import pytest

from tests.mesh.conftest import fast_config
from tests.mesh.processes import NodeProcess, config_arguments

PARTITIONS = 4
RECORDS_PER_PARTITION = 25_000
STARTED = "event='node_started'"


class LineCollector:
    """Reads a consumer's stdout in a thread so the pipe never fills."""

    def __init__(self, node: NodeProcess):
        self.lines: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(node.process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line.rstrip(b"\n"))

    def wait_for(self, count: int, timeout: float) -> list[bytes]:
        deadline = time.monotonic() + timeout
        while len(self.lines) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.lines


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    """A tower and two stores, shared by the tests of this module."""
    directory = tmp_path_factory.mktemp("mesh")
    config = fast_config()
    nodes = [NodeProcess.tower(config, directory / "tower.log")]
    nodes[0].wait_for_log("event='tower_started'")
    for name in ("a", "b"):
        nodes.append(NodeProcess.store(config, directory / f"store-{name}", directory / f"store-{name}.log"))
    for store in nodes[1:]:
        store.wait_for_log(STARTED, count=2)
    yield config, directory, nodes
    for node in reversed(nodes):
        node.stop()


def start_consumer(config, directory, name: str, *topics: str) -> tuple[NodeProcess, LineCollector]:
    consumer = NodeProcess("gateway.mesh.consumer", [*config_arguments(config), "--offset-reset=earliest", *topics],
                           directory / f"{name}.log", stdout=subprocess.PIPE)
    return consumer, LineCollector(consumer)


def expected_lines(partition: int) -> list[bytes]:
    return [b"p%d-%06d" % (partition, i) for i in range(RECORDS_PER_PARTITION)]


def feed(producer: NodeProcess, lines: list[bytes]) -> None:
    producer.process.stdin.write(b"\n".join(lines) + b"\n")
    producer.process.stdin.close()


def assert_complete_in_order(lines: list[bytes]) -> None:
    for partition in range(PARTITIONS):
        mine = [line for line in lines if line.startswith(b"p%d-" % partition)]
        assert mine == expected_lines(partition)  # all there, in order, once
    assert len(lines) == PARTITIONS * RECORDS_PER_PARTITION


def test_100k_records_reach_both_consumers_then_a_late_one(mesh):
    config, directory, _ = mesh
    consumers = [start_consumer(config, directory, f"consumer-{i}", "load") for i in range(2)]
    for consumer, _ in consumers:
        consumer.wait_for_log(STARTED)
        consumer.wait_for_log("event='peer_appeared'", count=4)  # the two stores' writer and reader
    producers = []
    for partition in range(PARTITIONS):
        producer = NodeProcess("gateway.mesh.producer", [*config_arguments(config), "--acks=2", "load"],
                               directory / f"producer-{partition}.log", stdin=subprocess.PIPE)
        producers.append(producer)
    for partition, producer in enumerate(producers):  # fed at once: a pipe holds only 64 KiB
        threading.Thread(target=feed, args=(producer, expected_lines(partition)), daemon=True).start()
    try:
        for producer in producers:
            assert producer.process.wait(90) == 0, producer.log_text()  # every record ACKed by both stores
        for _, lines in consumers:
            assert_complete_in_order(lines.wait_for(PARTITIONS * RECORDS_PER_PARTITION, 60))
        late, late_lines = start_consumer(config, directory, "consumer-late", "load")
        assert_complete_in_order(late_lines.wait_for(PARTITIONS * RECORDS_PER_PARTITION, 60))
        late.stop()
    finally:
        for node, _ in consumers:
            node.stop()
        for producer in producers:
            producer.stop()


def test_dead_peer_is_expired_after_the_beacon_timeout(mesh):
    config, directory, nodes = mesh
    consumer, _ = start_consumer(config, directory, "doomed", "nothing")
    consumer.wait_for_log(STARTED)
    uuid = consumer.log_text().split("uuid='")[1][:32]
    store = nodes[1]
    deadline = time.monotonic() + 10
    while f"peer='{uuid}'" not in store.log_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    consumer.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    store.wait_for_log(f"event='peer_expired' node='store-writer' peer='{uuid}'", timeout=10)
    waited = time.monotonic() - killed_at
    assert config.beacon_timeout_ms / 1000 - 0.2 <= waited <= config.beacon_timeout_ms / 1000 + 2
