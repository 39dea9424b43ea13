"""A store's Prometheus metrics: what it writes, and how long writes and fsyncs take."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from gateway.observability.broker_metrics import LATENCY_BUCKETS

RECORDS_WRITTEN = Counter("dafka_store_records_written", "Records appended to the store's log")
BYTES_WRITTEN = Counter("dafka_store_bytes_written", "Bytes of record contents appended to the store's log")
WRITE_SECONDS = Histogram("dafka_store_write_seconds", "Time to append one run of records to the log",
                          buckets=LATENCY_BUCKETS)
FSYNC_SECONDS = Histogram("dafka_store_fsync_seconds", "Time to make the log durable (fdatasync of every "
                          "segment written)", buckets=LATENCY_BUCKETS)
