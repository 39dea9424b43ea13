"""Codec throughput: Metadata v12 response with 1000 partitions, Produce v9 request.

Run: python bench/codec.py   (prints figures; never fails on speed)
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.kafka import (  # noqa: E402
    REQUEST,
    RESPONSE,
    by_name,
    decode_body,
    decode_request,
    encode_body,
    encode_request,
)

METADATA = by_name("Metadata")
PRODUCE = by_name("Produce")


def metadata_response():
    response = METADATA.Response
    partitions = [
        response.Topics.Partitions(
            partition_index=i, leader_id=i % 3, leader_epoch=7,
            replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2],
        )
        for i in range(1000)
    ]
    topic = response.Topics(name="events", topic_id=uuid.uuid4(), partitions=partitions)
    brokers = [response.Brokers(node_id=i, host=f"gw{i}", port=9092) for i in range(3)]
    return response(brokers=brokers, cluster_id="dafka", controller_id=0, topics=[topic])


def produce_frame():
    request = PRODUCE.Request
    batch = bytes(16 * 1024)
    partitions = [request.TopicData.PartitionData(index=i, records=batch) for i in range(100)]
    body = request(acks=-1, timeout_ms=30000, topic_data=[request.TopicData(name="events", partition_data=partitions)])
    return bytes(encode_request(0, 9, 1, "bench", body))


def measure(label: str, action, rounds: int = 7, seconds: float = 0.3) -> None:
    """Best round of several: other load on the machine only ever slows a round."""
    best = float("inf")
    for _ in range(rounds):
        runs, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            action()
            runs += 1
        best = min(best, elapsed / runs)
    print(f"{label:48s} {1 / best:10.1f} ops/s {best * 1e6:10.1f} µs/op")


def main() -> None:
    response = metadata_response()
    encoded = bytes(encode_body(METADATA, 12, RESPONSE, response))
    print(f"Metadata v12 response: {len(encoded)} bytes, 1000 partitions")
    measure("encode Metadata v12 response (1000 partitions)", lambda: encode_body(METADATA, 12, RESPONSE, response))
    measure("decode Metadata v12 response (1000 partitions)", lambda: decode_body(METADATA, 12, RESPONSE, encoded))
    frame = produce_frame()
    print(f"Produce v9 request: {len(frame)} bytes, 100 batches of 16 KiB")
    measure("decode Produce v9 request (100 x 16 KiB)", lambda: decode_request(frame))
    request = decode_request(frame)[1]
    measure("encode Produce v9 request body (100 x 16 KiB)", lambda: encode_body(PRODUCE, 9, REQUEST, request))


if __name__ == "__main__":
    main()
