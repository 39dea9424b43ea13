"""The windowed-counts pipeline on a local SparkSession, its data in the real gateway.

Without the Kafka connector the Kafka clients carry the records between the
gateway and Spark: events produced to the gateway are read back with
confluent-kafka and handed to the transformation, whose results are produced
to the gateway and read back. For the streaming restart the query reads a file
source that each round feeds with the records newly read from the gateway (its
checkpoint then holds how far it read, as it holds the Kafka offsets with the
connector) and writes through foreachBatch to the gateway. With
SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES set, the same checks run the whole job
through format("kafka").
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Consumer, TopicPartition

from pipelines.windowed_counts import Windowing, run_batch, start_stream, transform
from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.pipeline.conftest import CONNECTOR

EVENTS, COUNTS = "events", "event-counts"
PARTITIONS = 2
KEYS = ("alpha", "beta", "gamma")
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
WINDOWING = Windowing(window="1 minute", watermark="1 minute")
RECORD_SCHEMA = "key string, value string, topic string, partition int, offset long"
STREAM_TIMEOUT_S = 120

needs_connector = pytest.mark.skipif(
    not any(CONNECTOR.values()), reason="neither SPARK_KAFKA_JARS nor SPARK_KAFKA_PACKAGES names Spark's Kafka connector")


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


@pytest.fixture
def topics(gateway):
    create_topic(gateway.bootstrap, EVENTS, PARTITIONS)
    create_topic(gateway.bootstrap, COUNTS, 1)
    return gateway.bootstrap


def await_query(query) -> None:
    finished = query.awaitTermination(STREAM_TIMEOUT_S)
    if not finished:
        query.stop()
    assert finished and query.exception() is None, query.exception()


def check_restart(bootstrap: str, run_query) -> None:
    """Two runs of one streaming query on one checkpoint, events produced before each:
    the first writes the windows its watermark closed, the second all the others, each once."""
    first, second = [event(n) for n in range(40)], [event(n) for n in range(40, 80)]
    every = expected(first + second)
    produce_events(bootstrap, first)
    run_query()
    after_first = written(bootstrap)
    assert after_first and after_first.items() <= every.items()
    produce_events(bootstrap, second + [CLOSING])
    run_query()
    assert written(bootstrap) == every


def test_batch_transformation_over_gateway(topics, spark):
    events = [event(n) for n in range(60)] + [CLOSING]
    produce_events(topics, events)
    records = [(r.key.decode(), r.value.decode(), EVENTS, r.partition, r.offset)
               for r in read_all(topics, EVENTS, PARTITIONS)]
    results = transform(spark.createDataFrame(records, RECORD_SCHEMA), WINDOWING).collect()
    produce_results(topics, results)
    assert written(topics) == expected(events)


def test_stream_restarted_from_checkpoint_over_gateway(topics, spark, tmp_path):
    source, checkpoint = tmp_path / "records", tmp_path / "checkpoint"
    source.mkdir()
    fed: set[tuple[int, int]] = set()

    def feed_new_records() -> None:
        """One file of the records not fed yet, as the next input of the file source."""
        new = [r for r in read_all(topics, EVENTS, PARTITIONS) if (r.partition, r.offset) not in fed]
        fed.update((r.partition, r.offset) for r in new)
        rows = [{"key": r.key.decode(), "value": r.value.decode(), "topic": EVENTS, "partition": r.partition,
                 "offset": r.offset} for r in new]
        (source / f"records-{len(fed)}.json").write_text("".join(json.dumps(row) + "\n" for row in rows))

    def run_query() -> None:
        feed_new_records()
        records = spark.readStream.schema(RECORD_SCHEMA).json(str(source))
        query = (transform(records, WINDOWING).writeStream.outputMode("append")
                 .option("checkpointLocation", str(checkpoint))
                 .foreachBatch(lambda results, _: produce_results(topics, results.collect()))
                 .trigger(availableNow=True).start())
        await_query(query)

    check_restart(topics, run_query)


@needs_connector
def test_batch_job_through_connector(topics, spark):
    events = [event(n) for n in range(60)] + [CLOSING]
    produce_events(topics, events)
    run_batch(spark, topics, EVENTS, COUNTS, WINDOWING)
    assert written(topics) == expected(events)


@needs_connector
def test_stream_job_restarted_from_checkpoint_through_connector(topics, spark, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    check_restart(topics, lambda: await_query(
        start_stream(spark, topics, EVENTS, COUNTS, checkpoint, WINDOWING, available_now=True)))
