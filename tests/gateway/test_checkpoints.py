"""Start-up from partition checkpoints: the batches after them are all it reads."""

import re

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.gateway.clients import confluent_consume
from tests.gateway.server import GatewayProcess

TOPIC = "checkpointed"
NO_PERIODIC_CHECKPOINT = ("--log-flush-offset-checkpoint-interval-ms", "600000")  # only at a clean stop
BASE_TIMESTAMP = 1_700_000_000_000


def produce_batches(bootstrap: str, first: int, count: int) -> None:
    """Records first..first+count-1, a batch each, timestamped 1 s apart."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for n in range(first, first + count):
        producer.produce(TOPIC, b"record %d" % n, timestamp=BASE_TIMESTAMP + n * 1000)
        assert producer.flush(30) == 0


def recovery(server: GatewayProcess) -> dict[str, int]:
    """The figures of the last start-up's topics_ready line."""
    line = [line for line in server.log_path.read_text().splitlines() if "topics_ready" in line][-1]
    return {key: int(value) for key, value in re.findall(r"(partitions_\w+|batches_read)=(\d+)", line)}


def assert_all_there(bootstrap: str, count: int) -> None:
    got = confluent_consume(bootstrap, TOPIC, [0], count)
    assert [(g.offset, g.value) for g in got] == [(n, b"record %d" % n) for n in range(count)]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        wanted = TopicPartition(TOPIC, 0, BASE_TIMESTAMP + (count // 2) * 1000 - 1)
        assert consumer.offsets_for_times([wanted], timeout=30)[0].offset == count // 2
    finally:
        consumer.close()


def test_a_clean_restart_reads_no_batch(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", *NO_PERIODIC_CHECKPOINT).start()
    produce_batches(server.bootstrap, 0, 30)
    assert server.stop() == 0
    assert "partitions_checkpointed" in server.log_path.read_text()
    server.start()
    assert recovery(server) == {"partitions_from_checkpoints": 1, "partitions_rebuilt": 0, "batches_read": 0}
    assert_all_there(server.bootstrap, 30)
    produce_batches(server.bootstrap, 30, 1)
    assert_all_there(server.bootstrap, 31)
    server.stop()


def test_after_a_crash_the_batches_after_the_checkpoint_are_read(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", *NO_PERIODIC_CHECKPOINT).start()
    produce_batches(server.bootstrap, 0, 20)
    server.stop()  # the checkpoint: 20 batches
    server.start()
    produce_batches(server.bootstrap, 20, 10)
    server.kill()
    server.start()
    assert recovery(server) == {"partitions_from_checkpoints": 1, "partitions_rebuilt": 0, "batches_read": 10}
    assert_all_there(server.bootstrap, 30)
    server.stop()


def test_a_damaged_checkpoint_is_not_used(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", *NO_PERIODIC_CHECKPOINT).start()
    produce_batches(server.bootstrap, 0, 10)
    server.stop()
    [checkpoint] = (tmp_path / "gateway" / "checkpoints").glob("*.checkpoint")
    damaged = bytearray(checkpoint.read_bytes())
    damaged[-1] ^= 0xFF
    checkpoint.write_bytes(damaged)
    server.start()
    assert "checkpoint_unreadable" in server.log_path.read_text()
    assert recovery(server) == {"partitions_from_checkpoints": 0, "partitions_rebuilt": 1, "batches_read": 10}
    assert_all_there(server.bootstrap, 10)
    server.stop()
