"""The gateway's Prometheus metrics: Kafka's broker, topic and request metrics under our names.

Counters and histograms are updated where things happen (those updated per request or per
batch are loop_metrics', the rare ones prometheus_client's); the gauges that describe state
(partitions, journals, consumer lag) are read when scraped.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from gateway.observability.loop_metrics import LoopCounter, LoopGauge, LoopHistogram

# From 0.1 ms: acks=all answers on a quiet node take a few hundred microseconds.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0, 30.0)

BYTES_IN = LoopCounter("dafka_gateway_bytes_in", "Bytes of record batches appended, by topic", ["topic"])
RECORDS_IN = LoopCounter("dafka_gateway_records_in", "Records appended, by topic", ["topic"])
BYTES_OUT = LoopCounter("dafka_gateway_bytes_out", "Bytes of record batches sent to consumers, by topic", ["topic"])
RECORDS_OUT = LoopCounter("dafka_gateway_records_out", "Records sent to consumers, by topic", ["topic"])
REQUEST_SECONDS = LoopHistogram("dafka_gateway_request_seconds",
                                "Time from a request's arrival to its answer (long polls included), by API",
                                ["api"], buckets=LATENCY_BUCKETS)
STORE_WAIT_SECONDS = LoopHistogram("dafka_gateway_produce_store_wait_seconds",
                                   "acks=all produce: time from publishing its batches until the gateway saw "
                                   "min.insync.replicas stores acknowledge them (part of the request's time)",
                                   buckets=LATENCY_BUCKETS)
FAILED_REQUESTS = Counter("dafka_gateway_failed_requests", "Requests that ended their connection, by API",
                          ["api"])
AUTHENTICATIONS = Counter("dafka_gateway_authentications", "SASL authentications by listener, mechanism and "
                          "result (authenticated, reauthenticated, failed)", ["listener", "mechanism", "result"])
CONNECTIONS = Gauge("dafka_gateway_connections", "Client connections open, by listener", ["listener"])
QUEUED_REQUEST_BYTES = LoopGauge("dafka_gateway_queued_request_bytes",
                                 "Bytes of requests read and not yet answered, over all connections "
                                 "(bounded by queued.max.request.bytes)")
UNSENT_RESPONSE_BYTES = LoopGauge("dafka_gateway_unsent_response_bytes",
                                  "Bytes of responses built and not yet sent, over all connections")
bytes_in, records_in, request_seconds = BYTES_IN.labels, RECORDS_IN.labels, REQUEST_SECONDS.labels
