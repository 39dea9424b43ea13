"""Produce at a fixed offered rate, as an application does: the collapse case of small records.

Records of 100 B offered at a steady rate (10,000/s and 50,000/s by default) to one
partition with linger.ms=0 and acks=all (the defaults of librdkafka and the Java
client, many small produce requests in flight on one connection), against the
gateway (durable) and Tansu (in memory), interleaved. Printed per run: the rate
delivered, and the delivery latency (produce() to acknowledgement) p50, p99 and max;
for the gateway also where a request's time went and the CPU its process and its
store's spent per Produce request (utime + stime from /proc).
A broker that keeps up delivers the offered rate at a flat latency; one that does
not falls behind and its latency grows with the queue.

With `--fsync interval` the store ACKs once a batch is written and syncs once a second
(`store.fsync=interval`: page cache, as Kafka's default flush policy), to compare with
Tansu in memory; by default it syncs every batch before its ACK.

With `--client java` the records come from the Java client (OfferedRate.java beside this
file, compiled with javac against the kafka-clients jar the tests use) instead of
confluent-kafka from Python: it parks between records rather than pacing in Python, so
on a small machine the latency measured is less the client's own.

    python bench/offered_rate.py [--rates 10000,50000] [--seconds 10] [--rounds 3] [--fsync batch|interval]
                                 [--client confluent|java]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Producer
from gateway_stages import REQUESTS, mean_ms, snapshot
from kafka_throughput import Target, add_gateway_options, create_topic, load, start_gateway, start_tansu
from process_cpu import CpuMeter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.java.test_java_conformance import JVM_OPTIONS, classpath_of, client_jars  # noqa: E402

SIZE = 100
JAVA_SOURCE = Path(__file__).with_name("OfferedRate.java")


def offer(target: Target, topic: str, rate: int, seconds: float, settings: dict) -> tuple[float, list[float]]:
    """Records offered at `rate` per second for `seconds`: (records delivered per second over
    the run until the last acknowledgement, the delivery latencies in ms)."""
    producer = Producer({"bootstrap.servers": target.bootstrap, "acks": "all", "linger.ms": 0, **settings})
    latencies: list[float] = []

    def delivered(error, message) -> None:
        if error is None:
            latencies.append(message.latency() * 1000)

    payload = bytes(SIZE)
    total = int(rate * seconds)
    started = time.perf_counter()
    for n in range(total):  # each record at its time, as rdkafka_performance -r paces them
        pause = started + n / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        while True:
            try:
                producer.produce(topic, payload, on_delivery=delivered)
                break
            except BufferError:  # the client's queue is full: the broker is far behind the offer
                producer.poll(0.01)
        if n % 64 == 0:
            producer.poll(0)
    producer.flush(120)
    return len(latencies) / (time.perf_counter() - started), latencies


def java_offer(classpath: str):
    """`offer` by the Java client, compiled onto `classpath`."""

    def offer_by_java(target: Target, topic: str, rate: int, seconds: float, settings: dict):
        if settings:
            raise SystemExit("--max-in-flight is for the confluent-kafka client")
        run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "OfferedRate", target.bootstrap, topic,
                              str(rate), str(seconds), str(SIZE)], capture_output=True, text=True, check=True)
        delivered, *latencies = run.stdout.split()
        return float(delivered), [int(us) / 1000 for us in latencies]

    return offer_by_java


def java_classpath(classes: Path) -> str:
    if client_jars() is None:
        raise SystemExit("the Java client's jars are missing: pip install shigawire-apache-flink-libraries")
    return classpath_of(JAVA_SOURCE, classes)


def summary(rate: float, latencies: list[float]) -> str:
    if len(latencies) < 100:
        return f"delivered {len(latencies)} records"
    cuts = statistics.quantiles(latencies, n=100)
    return f"{rate:9.0f} msg/s  p50 {cuts[49]:8.2f} ms  p99 {cuts[98]:8.2f} ms  max {max(latencies):8.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="10000,50000", help="offered records per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3, help="runs per rate and broker, interleaved")
    parser.add_argument("--fsync", choices=("batch", "interval"), default="batch", help="the store's store.fsync")
    add_gateway_options(parser)
    parser.add_argument("--max-in-flight", type=int, help="max.in.flight.requests.per.connection (client default if unset)")
    parser.add_argument("--client", choices=("confluent", "java"), default="confluent")
    arguments = parser.parse_args()
    settings = {} if arguments.max_in_flight is None else {
        "max.in.flight.requests.per.connection": arguments.max_in_flight}
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-offered-")))
        producing = java_offer(java_classpath(directory / "classes")) if arguments.client == "java" else offer
        targets = [start_gateway(stack, directory, "--store-fsync", arguments.fsync, *arguments.gateway_option)]
        tansu = start_tansu(stack, directory)
        if tansu:
            targets.append(Target("tansu", tansu))
        print(f"{SIZE} B records from {arguments.client}, acks=all, linger.ms=0, one partition, "
              f"{settings or 'client defaults'}, "
              f"store.fsync={arguments.fsync}; {load()}")
        for rate in (int(r) for r in arguments.rates.split(",")):
            for round_ in range(arguments.rounds):
                for target in targets:
                    topic = create_topic(target, 1)
                    before = snapshot(target.metrics) if target.metrics else None
                    meter = CpuMeter(target.pid) if target.pid else None
                    delivered, latencies = producing(target, topic, rate, arguments.seconds, settings)
                    print(f"offered {rate:6d}/s  {target.name:8s} round {round_ + 1}: "
                          f"{summary(delivered, latencies)}  ({load()})", flush=True)
                    if before is not None:
                        after = snapshot(target.metrics)
                        means = mean_ms(before, after)
                        print("    " + "; ".join(f"{stage} {ms:.2f} ms" for stage, ms in means.items()
                                                 if ms is not None), flush=True)
                        requests = int(after[REQUESTS][1] - before[REQUESTS][1])
                        print(f"    {requests} Produce requests, {len(latencies) / max(requests, 1):.1f} records "
                              f"each; CPU per request: {meter.per(requests)}", flush=True)


if __name__ == "__main__":
    main()
