"""The idempotent producer: lost responses and a gateway restart never duplicate records."""

from __future__ import annotations

import threading

import pytest

from tests.gateway.clients import (
    CLIENTS,
    Sent,
    aiokafka_produce,
    confluent_consume,
    confluent_produce,
    kafka_python_produce,
)
from tests.gateway.groups import wait_until
from tests.gateway.lossy_proxy import LossyProxy
from tests.gateway.server import GatewayProcess
from tests.mesh.conftest import free_port

COUNT = 3000
RESTART_COUNT = 30000
KILL_AFTER = 1000  # records in before the SIGKILL
IDEMPOTENT = {
    # Small batches: many produce requests, so that many responses are lost.
    "confluent-kafka": (confluent_produce, {"enable.idempotence": True, "linger.ms": 5, "batch.num.messages": 50}),
    "aiokafka": (aiokafka_produce, {"enable_idempotence": True, "linger_ms": 5, "max_batch_size": 1024}),
    "kafka-python": (kafka_python_produce, {"enable_idempotence": True, "linger_ms": 5, "batch_size": 1024}),
}


@pytest.fixture
def lossy_gateway(tmp_path):
    """A gateway whose clients reach it through a proxy that loses every 7th produce response
    (it closes the connection instead); the gateway advertises the proxy."""
    proxy_port = free_port()
    server = GatewayProcess(tmp_path / "gateway")
    server.options = ("--advertised-listeners", f"PLAINTEXT://127.0.0.1:{proxy_port}")
    server.start()
    proxy = LossyProxy(proxy_port, server.port, drop_every=7)
    yield f"127.0.0.1:{proxy_port}", proxy
    proxy.close()
    server.stop()


@pytest.mark.parametrize("client", IDEMPOTENT)
def test_dropped_responses_are_retried_without_duplicates(lossy_gateway, client):
    bootstrap, proxy = lossy_gateway
    produce, config = IDEMPOTENT[client]
    sent = [Sent(f"{i:06}".encode()) for i in range(COUNT)]
    produce(bootstrap, "lossy", sent, **config)
    got = CLIENTS["confluent-kafka"][1](bootstrap, "lossy", [0], COUNT)
    assert [m.value for m in got] == [s.value for s in sent]
    assert [m.offset for m in got] == list(range(COUNT))
    assert proxy.dropped > 0, "no produce response was lost"


def test_sequence_state_survives_a_gateway_restart(tmp_path):
    """SIGKILL mid-stream, restart on the same data: retried batches are recognised."""
    gateway = GatewayProcess(tmp_path / "gateway").start()
    sent = [Sent(f"{i:06}".encode()) for i in range(RESTART_COUNT)]
    done = threading.Event()

    def produce():
        confluent_produce(gateway.bootstrap, "restarted", sent, **{"enable.idempotence": True, "linger.ms": 5,
                                                                     "batch.num.messages": 50})
        done.set()

    from confluent_kafka import Consumer

    watching = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "watermark"})
    producer = threading.Thread(target=produce)
    producer.start()
    try:  # mid-stream: once a few batches are in, whatever the machine's speed
        wait_until(lambda: done.is_set() or high_watermark(watching, "restarted") >= KILL_AFTER, 60,
                   f"{KILL_AFTER} records produced")
    finally:
        watching.close()
    assert not done.is_set(), "the producer finished before the gateway was killed"
    gateway.kill()
    gateway.start()
    producer.join(120)
    try:
        assert done.is_set()
        got = confluent_consume(gateway.bootstrap, "restarted", [0], RESTART_COUNT)
        values = [m.value for m in got]
        assert len(values) == len(set(values)), "a record was appended twice"
        assert values == [s.value for s in sent]
    finally:
        gateway.stop()


def high_watermark(consumer, topic: str) -> int:
    """The partition's high watermark; 0 while the topic does not exist yet."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1]
    except KafkaException:
        return 0
