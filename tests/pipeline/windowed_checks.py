"""The windowed-counts pipeline's checks, for any bootstrap address: the embedded node's
(tests/pipeline) or the compose cluster's (tests/compose)."""

from __future__ import annotations

import json
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone

from confluent_kafka import Consumer, TopicPartition

from pipelines.windowed_counts import Windowing, transform
from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce

EVENTS, COUNTS = "events", "event-counts"
PARTITIONS = 2
KEYS = ("alpha", "beta", "gamma")
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
WINDOWING = Windowing(window="1 minute", watermark="1 minute")
RECORD_SCHEMA = "key string, value string, topic string, partition int, offset long"


def event(n: int) -> dict:
    """Event n: every 7 s, keys in turn, so each key has events in every one-minute window."""
    return {"key": KEYS[n % len(KEYS)], "time": (START + timedelta(seconds=7 * n)).isoformat(), "amount": n}


# An hour after the others: a stream's watermark then closes every window before it.
CLOSING = {"key": "closing", "time": (START + timedelta(hours=1)).isoformat(), "amount": 0}


def expected(events: list[dict]) -> dict:
    """{(key, window start): (events, amount)} computed without Spark."""
    counts, amounts = Counter(), Counter()
    for e in events:
        time = datetime.fromisoformat(e["time"])
        window = (e["key"], START + timedelta(minutes=(time - START) // timedelta(minutes=1)))
        counts[window] += 1
        amounts[window] += e["amount"]
    return {window: (counts[window], amounts[window]) for window in counts}


def aggregates(values: list[bytes]) -> dict:
    """The pipeline's output in the form of `expected`; no window may be written twice."""
    rows = [json.loads(value) for value in values]
    found = {(r["key"], datetime.fromisoformat(r["window_start"])): (r["events"], r["amount"]) for r in rows}
    assert len(found) == len(rows), f"windows written more than once: {sorted(values)}"
    return found


def produce_events(bootstrap: str, events: list[dict]) -> None:
    confluent_produce(bootstrap, EVENTS, [
        Sent(value=json.dumps(e).encode(), key=e["key"].encode(), partition=zlib.crc32(e["key"].encode()) % PARTITIONS)
        for e in events])


def produce_results(bootstrap: str, rows) -> None:
    confluent_produce(bootstrap, COUNTS, [Sent(value=row.value.encode(), key=row.key.encode()) for row in rows])


def read_all(bootstrap: str, topic: str, partitions: int):
    """Every record in `topic`, as the Kafka clients read it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))
    finally:
        consumer.close()
    got = confluent_consume(bootstrap, topic, list(range(partitions)), total)
    assert len(got) == total
    return got


def written(bootstrap: str) -> dict:
    return aggregates([record.value for record in read_all(bootstrap, COUNTS, 1)])


def create_topics(bootstrap: str) -> None:
    create_topic(bootstrap, EVENTS, PARTITIONS)
    create_topic(bootstrap, COUNTS, 1)


def check_batch(spark, bootstrap: str) -> None:
    """Events produced to `bootstrap`, read back, transformed on Spark and the windows written
    back: each window once, with the counts and sums computed without Spark."""
    events = [event(n) for n in range(60)] + [CLOSING]
    produce_events(bootstrap, events)
    records = [(r.key.decode(), r.value.decode(), EVENTS, r.partition, r.offset)
               for r in read_all(bootstrap, EVENTS, PARTITIONS)]
    results = transform(spark.createDataFrame(records, RECORD_SCHEMA), WINDOWING).collect()
    produce_results(bootstrap, results)
    assert written(bootstrap) == expected(events)
