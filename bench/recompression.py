"""What a topic's compression.type costs when it differs from the producer's codec.

First checked_batch alone, per batch of about 1 MB (half random records of
100 B and 1 KB, as bench/validation.py builds them), sent uncompressed and
with lz4: keeping the producer's codec (compression.type=producer) against
recompressing to each codec at Kafka's default levels; the time per record
and the added time per record.

Then the gateway itself (started here): acks=all produce of 100 B and 1 KB
records, sent uncompressed by confluent-kafka as in bench/kafka_throughput.py
(one random payload repeated, so the codecs find every record after the
first again), into topics with each compression.type: records per second and
the gateway process's CPU time per record. Smaller stored batches also
lighten the mesh, so throughput may rise while CPU per record does too.

    python bench/recompression.py [--seconds 5] [--gateway-only]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource  # noqa: E402
from kafka_throughput import Target, create_topic  # noqa: E402 - beside this file
from records import seconds_per_call  # noqa: E402
from validation import (  # noqa: E402
    MAX_MESSAGE_BYTES,
    PRODUCE_VERSION,
    main,
    produce_figures,
    sample_batch,
    started_gateway,
)

from gateway.partitions.batch_checks import TopicCodec, checked_batch, topic_codec  # noqa: E402
from gateway.settings.table import BrokerSettings  # noqa: E402
from gateway.topics.topic_configs import TOPIC_CONFIGS  # noqa: E402
from protocol.records import Codec  # noqa: E402

TOPIC_CODECS = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
BATCH_BYTES = 1_000_000


def target_of(name: str) -> TopicCodec | None:
    """The codec a topic with compression.type `name` and default levels stores."""
    defaults = BrokerSettings()
    return topic_codec(lambda config: name if config == "compression.type" else
                       TOPIC_CONFIGS[config].inherited(defaults))


def checks_per_batch() -> None:
    print(f"{'records':>8s} {'sent':>6s} {'topic':>13s} {'checked':>10s} {'per record':>11s} {'added':>10s} "
          f"{'stored':>8s}")
    for record_bytes in (100, 1000):
        for sent in (Codec.NONE, Codec.LZ4):
            blob, count = sample_batch(record_bytes, BATCH_BYTES, sent)
            buffer = memoryview(bytearray(blob))  # checked_batch reads it only
            kept = None
            for name in TOPIC_CODECS:
                target = target_of(name)
                stored = checked_batch(buffer, PRODUCE_VERSION, MAX_MESSAGE_BYTES, target)
                took = seconds_per_call(lambda buffer=buffer, target=target: checked_batch(
                    buffer, PRODUCE_VERSION, MAX_MESSAGE_BYTES, target))
                kept = took if kept is None else kept
                print(f"{record_bytes:6d} B {sent.name.lower():>6s} {name:>13s} {took * 1e6:8.0f} us "
                      f"{took / count * 1e9:8.0f} ns {(took - kept) / count * 1e9:7.0f} ns "
                      f"{stored.size / 1024:6.0f} KB", flush=True)


def set_compression(bootstrap: str, topic: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("compression.type", name, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)


def gateway_produce(seconds: float) -> None:
    with started_gateway() as broker:
        for size in (100, 1000):
            for name in TOPIC_CODECS:
                topic = create_topic(Target("gateway", broker.bootstrap), 1)
                set_compression(broker.bootstrap, topic, name)
                print(f"produce {size:4d} B into compression.type={name:12s}: "
                      f"{produce_figures(broker, topic, size, seconds)}", flush=True)


if __name__ == "__main__":
    main(__doc__, checks_per_batch, gateway_produce)
