"""A native producer that never sends a HEAD still becomes a Kafka partition: the stores' ACKs tell of it."""

import subprocess
import sys
import time

from kafka import KafkaConsumer, TopicPartition

from tests.gateway.clients import TIMEOUT_S, confluent_consume
from tests.gateway.test_native import mesh_options, wait_for_end

NEVER_MS = 3_600_000  # a head interval the producer never lives to see


def test_a_short_lived_producer_without_heads_appears_once_stores_ack(gateway):
    topic = "native.headless"
    values = [b"headless-%d" % n for n in range(300)]
    producer = subprocess.Popen(
        [sys.executable, "-m", "gateway.mesh.dafka_producer", topic, "--acks=1", f"--head-interval-ms={NEVER_MS}",
         *mesh_options(gateway)],
        stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    consumer = KafkaConsumer(bootstrap_servers=gateway.bootstrap, enable_auto_commit=False)
    try:
        # Records published before the store subscribes are lost to it, and without HEADs nothing
        # tells it of them; one that arrives later makes it FETCH those before. So records go one
        # at a time until the gateway serves the partition, then the rest at once.
        sent = 0
        deadline = time.monotonic() + TIMEOUT_S
        while not consumer.partitions_for_topic(topic):
            assert time.monotonic() < deadline and sent < len(values), "the partition never appeared"
            producer.stdin.write(values[sent] + b"\n")
            producer.stdin.flush()
            sent += 1
            time.sleep(0.1)
            consumer.topics()  # fresh metadata
        producer.stdin.write(b"".join(value + b"\n" for value in values[sent:]))
        producer.stdin.close()
        wait_for_end(consumer, TopicPartition(topic, 0), len(values))
    finally:
        consumer.close()
        # Not waited for: without HEADs, an ACK the store sent before the producer had connected to
        # it is never sent again, so the producer may wait for its ACKs for ever.
        producer.kill()
        producer.wait()
    got = confluent_consume(gateway.bootstrap, topic, [0], len(values))
    assert [(g.offset, g.value) for g in got] == list(enumerate(values))
