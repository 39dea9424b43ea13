"""Restart with data: from start to serving a Metadata and a Fetch at the end of the log.

Fills a gateway (embedded store, durable) with --gb gigabytes of 1 KB records over
--partitions partitions, then restarts it --runs times after a clean stop
(SIGTERM), --runs times after a crash (SIGKILL) and --runs times with its
checkpoints removed (every batch read, as before checkpoints), each time timing from the
process's start to a Metadata answered and to the last record of a partition
fetched. Start-up reads only the batches after each partition's checkpoint
(the gateway's topics_ready line says how many), so the figures should not
grow with the data. Median, min, max, with the machine's load; it never fails
on speed.

    python bench/restart.py [--gb 10] [--partitions 100] [--runs 3] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.testing.broker_process import BrokerProcess  # noqa: E402

TOPIC = "restart-bench"
RECORD = os.urandom(1000)
PRODUCER = {"acks": "all", "linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "none"}


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def fill(bootstrap: str, gigabytes: float, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    total = int(gigabytes * 1e9 / len(RECORD))
    started = time.perf_counter()
    for n in range(total):
        while True:
            try:
                producer.produce(TOPIC, RECORD, partition=n % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(600)
    seconds = time.perf_counter() - started
    print(f"filled {total * len(RECORD) / 1e9:.1f} GB over {partitions} partitions in {seconds:.0f} s "
          f"({total * len(RECORD) / 1e6 / seconds:.0f} MB/s)  ({load()})", flush=True)


def serving_times(broker: BrokerProcess, partition: int) -> tuple[float, float]:
    """Seconds from the start to a Metadata answered, and to the partition's last record fetched."""
    started = time.perf_counter()
    broker.spawn()
    broker.wait_serving()
    AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(TOPIC, timeout=60)
    metadata = time.perf_counter() - started
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "restart-bench"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=60)
        consumer.assign([TopicPartition(TOPIC, partition, high - 1)])
        while (message := consumer.poll(1)) is None or message.error():
            pass
    finally:
        consumer.close()
    return metadata, time.perf_counter() - started


def recovery(broker: BrokerProcess) -> str:
    line = [line for line in broker.log_path.read_text().splitlines() if "topics_ready" in line][-1]
    return " ".join(re.findall(r"(?:partitions_\w+|batches_read)=\d+", line))


def summary(label: str, values: list[float]) -> str:
    return f"{label} median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, help="where the data goes (default: a temporary directory)")
    arguments = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-restart-", dir=arguments.data_dir))
    try:
        broker = BrokerProcess(directory / "data", log_path=directory / "gateway.log").start()
        fill(broker.bootstrap, arguments.gb, arguments.partitions)
        def without_checkpoints() -> None:  # as every start-up was before checkpoints: all batches read
            broker.stop()
            shutil.rmtree(directory / "data" / "checkpoints", ignore_errors=True)

        for how, stop in (("after a clean stop", broker.stop), ("after kill -9", broker.kill),
                          ("without checkpoints", without_checkpoints)):
            figures = []
            for run in range(arguments.runs):
                stop()
                figures.append(serving_times(broker, run % arguments.partitions))
                print(f"  restart {how}: Metadata {figures[-1][0]:.2f} s, last record fetched {figures[-1][1]:.2f} s;"
                      f" {recovery(broker)}  ({load()})", flush=True)
            print(summary(f"{how}: Metadata", [m for m, _ in figures]) + "; "
                  + summary("Fetch at the end", [f for _, f in figures]), flush=True)
        broker.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
