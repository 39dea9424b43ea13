"""The mesh as real processes on 127.0.0.1: tower, two stores, producers, consumers."""

import signal
import subprocess
import threading
import time

import pytest
import trio

from gateway.mesh.dafka_producer import Producer
from gateway.mesh.store.store_log import StoreLog
from gateway.zmq_trio import zmq_context
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
    consumer = NodeProcess("gateway.mesh.dafka_consumer", [*config_arguments(config), "--consumer-offset-reset=earliest", *topics],
                           directory / f"{name}.log", stdout=subprocess.PIPE)
    return consumer, LineCollector(consumer)


def expected_lines(partition: int) -> list[bytes]:
    return [b"p%d-%06d" % (partition, i) for i in range(RECORDS_PER_PARTITION)]


def feed(producer: NodeProcess, directory, partition: int) -> None:
    """Pipe the partition's lines from a file to the producer through `cat`: no Python
    thread of this process competes with the nodes for the CPU."""
    lines = directory / f"partition-{partition}.txt"
    lines.write_bytes(b"\n".join(expected_lines(partition)) + b"\n")
    with open(lines, "rb") as source:
        subprocess.Popen(["cat"], stdin=source, stdout=producer.process.stdin)
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
        producer = NodeProcess("gateway.mesh.dafka_producer", [*config_arguments(config), "--acks=2", "load"],
                               directory / f"producer-{partition}.log", stdin=subprocess.PIPE)
        producers.append(producer)
    for producer in producers:  # records published before peers connect would all be FETCHed
        producer.wait_for_log("event='peer_appeared'", count=6)
    time.sleep(0.3)  # subscriptions travel after the connections
    for partition, producer in enumerate(producers):
        feed(producer, directory, partition)
    try:
        for producer in producers:
            assert producer.process.wait(90) == 0, producer.log_text()  # every record ACKed by both stores
        for _, lines in consumers:
            assert_complete_in_order(lines.wait_for(PARTITIONS * RECORDS_PER_PARTITION, 60))
        late, late_lines = start_consumer(config, directory, "consumer-late", "load")
        # generous: on a loaded 2-core machine replaying 100k records through FETCH can take a minute
        assert_complete_in_order(late_lines.wait_for(PARTITIONS * RECORDS_PER_PARTITION, 150))
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
    store.wait_for_log(f"peer='{uuid}'")
    consumer.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    while not any("event='peer_expired'" in line and f"peer='{uuid}'" in line
                  for line in store.log_text().splitlines()):
        assert time.monotonic() - killed_at < 15, f"{uuid} never expired:\n{store.log_text()}"
        time.sleep(0.05)
    waited = time.monotonic() - killed_at
    # Never before the timeout; after it, as soon as the next beacon check runs
    # (the margin above allows for a loaded machine).
    assert config.beacon_timeout_ms / 1000 - 0.3 <= waited <= config.beacon_timeout_ms / 1000 + 5


def test_a_second_store_on_the_same_directory_exits(mesh):
    config, directory, _ = mesh
    second = NodeProcess.store(config, directory / "store-a", directory / "store-a-again.log")
    assert second.process.wait(30) == 1
    assert "event='store_directory_in_use'" in second.log_text()


async def test_a_killed_store_keeps_what_it_acked_and_catches_up(mesh):
    config, directory, _ = mesh
    store_db = directory / "store-c"
    store = await _started_store(config, store_db)
    store_uuid = (store_db / "writer.uuid").read_text()
    with zmq_context() as context:
        producer = Producer(context, config)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(producer.run)
                partition = producer.host("durable")
                await _publish(partition, 0, 2000, stores=3)
                for sequence in range(2000, 4000):
                    await partition.publish(b"durable %d" % sequence)
                store.stop(signal.SIGKILL)
                acked_before_kill = partition.acked_by(store_uuid)
                await _publish(partition, 4000, 6000, stores=2)  # while it is down
                store = await _started_store(config, store_db)
                with trio.fail_after(60):
                    await partition.wait_acked(5999, stores=3)  # it fetched what it missed
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
    store.stop()
    assert acked_before_kill >= 1999
    with StoreLog(store_db / "log") as log:
        entries = list(log.read("durable", partition.uuid, 0, 10_000, 1 << 30))
    assert [(e.sequence, bytes(e.content)) for e in entries] == [(i, b"durable %d" % i) for i in range(6000)]


async def _started_store(config, store_db) -> NodeProcess:
    log_path = store_db.parent / f"{store_db.name}.log"
    earlier = log_path.read_text().count(STARTED) if log_path.exists() else 0
    store = NodeProcess.store(config, store_db, log_path)
    await trio.to_thread.run_sync(store.wait_for_log, STARTED, earlier + 2)  # its writer and reader
    return store


async def _publish(partition, first: int, end: int, *, stores: int) -> None:
    for sequence in range(first, end):
        await partition.publish(b"durable %d" % sequence)
    with trio.fail_after(60):
        await partition.wait_acked(end - 1, stores)
