"""Crashes: nothing a client was told is written may be lost."""

import threading

import pytest
from confluent_kafka import Producer

from tests.gateway.clients import Sent, confluent_consume, confluent_produce, kafka_python_produce
from tests.gateway.conftest import IN_PROCESS
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess


def produce_until_killed(server: GatewayProcess, topic: str, acknowledged: list[bytes],
                         killed: threading.Event) -> None:
    """Produce with acks=all, noting every value the gateway acknowledged."""
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 2,
                         "message.timeout.ms": 5000, "retries": 0})

    def delivered(error, message):
        if error is None:
            acknowledged.append(message.value())

    number = 0
    while not killed.is_set():
        try:
            producer.produce(topic, f"value-{number:08d}".encode(), on_delivery=delivered)
            number += 1
        except BufferError:
            pass
        producer.poll(0.001)
    producer.flush(10)


def acknowledged_before(server: GatewayProcess, topic: str, count: int, interrupt) -> list[bytes]:
    """Produce with acks=all until `count` are acknowledged, then `interrupt(server)`
    while production goes on; restart the gateway if that stopped it. The values
    the gateway acknowledged."""
    kafka_python_produce(server.bootstrap, topic, [Sent(value=b"first")], acks="all")
    acknowledged = [b"first"]
    interrupted = threading.Event()
    producing = threading.Thread(target=produce_until_killed, args=(server, topic, acknowledged, interrupted))
    producing.start()
    while len(acknowledged) < count:
        threading.Event().wait(0.05)
    interrupt(server)
    interrupted.set()
    producing.join()
    if server.process.poll() is not None:
        server.start()
    return acknowledged


@IN_PROCESS
@pytest.mark.parametrize("fsync", ["batch", "interval"])
def test_acknowledged_records_survive_sigkill(tmp_path, fsync, in_process):
    """Either fsync policy, the store in its own process or in the gateway's: what a store ACKed
    is at least in the OS, which outlives the processes."""
    server = GatewayProcess(tmp_path / "gateway", "--store-fsync", fsync, "--store-fsync-interval-ms", "200",
                            "--embedded-stores-in-process", in_process).start()
    acknowledged = acknowledged_before(server, "crash", 5000, GatewayProcess.kill)
    try:
        policy = "batch" if fsync == "batch" else "interval 0.2s"
        assert f"fsync='{policy}'" in server.log_path.read_text()
        got = confluent_consume(server.bootstrap, "crash", [0], len(acknowledged))
        values = [g.value for g in got]
        missing = set(acknowledged) - set(values)
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
        assert [g.offset for g in got] == list(range(len(got)))
    finally:
        server.stop()


def test_topics_and_configs_survive_restart(tmp_path):
    from tests.gateway.admin import create_topic
    server = GatewayProcess(tmp_path / "gateway").start()
    create_topic(server.bootstrap, "kept", partitions=3, configs={"retention.ms": "123456"})
    kafka_python_produce(server.bootstrap, "kept", [Sent(value=b"x", partition=2)], acks="all")
    server.stop()
    server.start()
    try:
        from confluent_kafka.admin import AdminClient, ConfigResource
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        metadata = admin.list_topics(timeout=10)
        assert len(metadata.topics["kept"].partitions) == 3
        resource = ConfigResource("topic", "kept")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["retention.ms"].value == "123456"
        got = confluent_consume(server.bootstrap, "kept", [0, 1, 2], 1)
        assert [(g.partition, g.value) for g in got] == [(2, b"x")]
    finally:
        server.stop()


def test_sigterm_answers_in_flight_produces_then_exits(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    exit_codes = []
    acknowledged = acknowledged_before(server, "graceful", 2000, lambda s: exit_codes.append(s.stop()))
    try:
        assert exit_codes == [0]
        assert "gateway_stopped" in server.log_path.read_text()
        got = confluent_consume(server.bootstrap, "graceful", [0], len(acknowledged))
        assert set(acknowledged) <= {g.value for g in got}
    finally:
        server.stop()


def test_store_killed_while_producing_with_two_stores(tmp_path):
    """min.insync.replicas=1 over two stores: SIGKILL one mid-stream, produce on; the
    gateway restarts it and nothing acknowledged is missing."""
    import os
    import signal

    from tests.gateway.server import children

    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "1", stores=2).start()

    def kill_one_store(server):
        os.kill(children(server.process.pid)[0], signal.SIGKILL)
        threading.Event().wait(3)  # production goes on meanwhile; the store comes back

    acknowledged = acknowledged_before(server, "store-crash", 3000, kill_one_store)
    try:
        got = confluent_consume(server.bootstrap, "store-crash", [0], len(acknowledged))
        missing = set(acknowledged) - {g.value for g in got}
        assert not missing, f"{len(missing)} acknowledged records lost"
        assert "store_exited" in server.log_path.read_text()
    finally:
        server.stop()


def children_of(pid: int) -> list[int]:
    import os

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_batches_no_store_takes_are_bounded_in_memory(tmp_path):
    """The store is frozen: of many acks=1 produce requests in flight, the gateway publishes
    only as many batches as fill --max-unacked-bytes and refuses the rest with
    REQUEST_TIMED_OUT instead of growing; the store thawed, produce works again and only
    batches that found room were stored."""
    import os
    import signal

    server = GatewayProcess(tmp_path / "gateway", "--max-unacked-bytes", "100000").start()
    (store,) = children_of(server.process.pid)
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": 1, "retries": 0, "linger.ms": 0,
                         "batch.size": 25_000, "request.timeout.ms": 500, "message.timeout.ms": 30000})
    sent = [b"%04d" % n + b"x" * 20_000 for n in range(16)]
    failed = []

    def delivered(error, message):
        failed.append(error is not None)

    confluent_produce(server.bootstrap, "frozen", [Sent(value=b"first")], acks=1)
    os.kill(store, signal.SIGSTOP)
    try:
        for value in sent:
            producer.produce("frozen", value, on_delivery=delivered)
        assert producer.flush(30) == 0
        assert failed == [True] * len(sent)  # no store holds any
        wait_until(lambda: "no room for more" in server.log_path.read_text(), 30,
                   "the gateway refused a produce for want of room")
    finally:
        os.kill(store, signal.SIGCONT)
    (last,) = confluent_produce(server.bootstrap, "frozen", [Sent(value=b"after")], acks=1)
    try:
        got = [g.value for g in confluent_consume(server.bootstrap, "frozen", [0], last + 1)]
        assert got[0] == b"first" and got[-1] == b"after"
        assert set(got[1:-1]) <= set(sent) and 3 <= len(got) - 2 < 10  # about 100 kB of 20 kB batches
    finally:
        server.stop()
