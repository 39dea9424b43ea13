"""Windowed counts per key: JSON events from one Kafka topic, aggregates to another.

An event is a JSON object {"key": str, "time": ISO-8601 timestamp, "amount": int}.
For every key and event-time window the job writes one record, keyed by the
event key, whose value is {"key", "window_start", "window_end", "events",
"amount"} as JSON. The streaming query writes a window once the watermark has
passed it (append mode), so each window is written exactly once.

With Spark's Kafka connector on the classpath (see the README):

    windowed_counts.py batch  --bootstrap HOST:PORT --source events --sink event-counts
    windowed_counts.py stream --bootstrap HOST:PORT --source events --sink event-counts --checkpoint DIR
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

EVENT_SCHEMA = StructType([
    StructField("key", StringType()),
    StructField("time", TimestampType()),
    StructField("amount", LongType()),
])


@dataclass(frozen=True)
class Windowing:
    window: str = "1 minute"
    # How late (in event time) an event may come and still be counted.
    watermark: str = "1 minute"


def parse_events(records: DataFrame) -> DataFrame:
    """Events from Kafka-shaped rows (a binary or string `value`); rows that are not events are dropped."""
    events = records.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event"))
    return events.select("event.*").where(F.col("key").isNotNull() & F.col("time").isNotNull())


def windowed_counts(events: DataFrame, windowing: Windowing) -> DataFrame:
    """Events and summed amounts per key and window; the watermark bounds the state a stream keeps."""
    return (events.withWatermark("time", windowing.watermark)
            .groupBy(F.window("time", windowing.window), "key")
            .agg(F.count(F.lit(1)).alias("events"), F.sum("amount").alias("amount")))


def to_records(counts: DataFrame) -> DataFrame:
    """Rows the Kafka sink writes: the event key as key, the aggregate as a JSON value."""
    aggregate = F.struct("key", F.col("window.start").alias("window_start"),
                         F.col("window.end").alias("window_end"), "events", "amount")
    return counts.select("key", F.to_json(aggregate).alias("value"))


def transform(records: DataFrame, windowing: Windowing = Windowing()) -> DataFrame:
    """The whole pipeline between the two topics, batch or streaming alike."""
    return to_records(windowed_counts(parse_events(records), windowing))


def _from_kafka(reader, bootstrap: str, topic: str):
    return (reader.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest"))


def run_batch(spark: SparkSession, bootstrap: str, source: str, sink: str,
              windowing: Windowing = Windowing()) -> None:
    """Aggregate everything in `source` now, into `sink`."""
    records = _from_kafka(spark.read, bootstrap, source).option("endingOffsets", "latest").load()
    (transform(records, windowing).write.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", sink).save())


def start_stream(spark: SparkSession, bootstrap: str, source: str, sink: str, checkpoint: str,
                 windowing: Windowing = Windowing(), available_now: bool = False) -> StreamingQuery:
    """The streaming query; restarted on the same checkpoint it goes on where it stopped.

    `available_now` processes what `source` holds, then stops.
    """
    records = _from_kafka(spark.readStream, bootstrap, source).load()
    writer = (transform(records, windowing).writeStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
              .option("checkpointLocation", checkpoint).outputMode("append"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("mode", choices=("batch", "stream"))
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--source", default="events")
    parser.add_argument("--sink", default="event-counts")
    parser.add_argument("--checkpoint", help="the streaming query's checkpoint directory (stream mode)")
    parser.add_argument("--window", default=Windowing.window)
    parser.add_argument("--watermark", default=Windowing.watermark)
    options = parser.parse_args(argv)
    if options.mode == "stream" and not options.checkpoint:
        parser.error("stream mode needs --checkpoint")
    spark = SparkSession.builder.appName("windowed-counts").getOrCreate()
    windowing = Windowing(options.window, options.watermark)
    if options.mode == "batch":
        run_batch(spark, options.bootstrap, options.source, options.sink, windowing)
    else:
        start_stream(spark, options.bootstrap, options.source, options.sink, options.checkpoint,
                     windowing).awaitTermination()


if __name__ == "__main__":
    main()
