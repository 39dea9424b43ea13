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

import pytest

from pipelines.windowed_counts import run_batch, start_stream, transform
from tests.pipeline.spark_session import CONNECTOR
from tests.pipeline.windowed_checks import (
    CLOSING,
    COUNTS,
    EVENTS,
    PARTITIONS,
    RECORD_SCHEMA,
    WINDOWING,
    check_batch,
    create_topics,
    event,
    expected,
    produce_events,
    produce_results,
    read_all,
    written,
)

STREAM_TIMEOUT_S = 120

needs_connector = pytest.mark.skipif(
    not any(CONNECTOR.values()), reason="neither SPARK_KAFKA_JARS nor SPARK_KAFKA_PACKAGES names Spark's Kafka connector")


@pytest.fixture
def topics(gateway):
    create_topics(gateway.bootstrap)
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
    check_batch(spark, topics)


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
