"""Faults against a cluster of gateways, with a history check (issue 16, the long run).

Three gateways (node ids 1-3, default `chp.session.timeout.ms`), one CHP server, a
tower and a store, each a process. An idempotent confluent-kafka producer with
default settings writes numbered records to every partition while faults are
injected one after another on a random gateway that leads partitions:

* kill: SIGKILL, then started again on its data directory once its partitions moved;
* pause: SIGSTOP until its partitions moved, then SIGCONT (a deposed leader waking up
  with requests it had read still to answer);
* partition: cut off the network until produce resumed on its partitions, then healed
  (every process then runs on a host of its own, a network namespace: needs root; see
  tests/gateway/hosts.py). A client learns that a request to a cut-off gateway is lost only
  from its timeout (librdkafka's socket.timeout.ms, 60 s by default; --client-timeout-ms).

Fail-over time is from the fault to the first record acknowledged, on every
partition the victim led, with a send time after the fault; a partition's
longest time without an acknowledgement shows any that stayed unavailable
(led by a gateway that could not serve it, say). At the end every partition
is read from the start and the history checked: acknowledged records lost,
duplicates, records out of their producer's order, and offsets not strictly
increasing; a partition not read back to its end is reported as such, its
records not counted as lost. Printed: operations (records still undelivered
when the producer gave up flushing included), faults, fail-over p50 and max,
the longest gaps, the checks.

    python bench/cluster_faults.py [--seconds 120] [--faults kill,pause,partition] [--interval 15]
                                   [--client-timeout-ms MS]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gateway.settings.table import ChpSettings  # noqa: E402
from tests.gateway.hosts import on_loopback, private_network, unsupported  # noqa: E402
from tests.gateway.test_cluster import (  # noqa: E402
    PARTITIONS,
    create_topic_through,
    gateway_cluster,
    leaders,
)

TOPIC = "history"


class History:
    """What the producer sent and what it was told, per partition."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acknowledged: dict[int, dict[int, bytes]] = defaultdict(dict)  # partition -> offset -> value
        self.acked_at: dict[int, list[tuple[float, float]]] = defaultdict(list)  # partition -> (sent, acked)
        self.failed = 0
        self.sent = 0

    def delivered(self, sent_at: float, error, message) -> None:
        with self.lock:
            if error is not None:
                self.failed += 1
                return
            self.acknowledged[message.partition()][message.offset()] = message.value()
            self.acked_at[message.partition()].append((sent_at, time.monotonic()))

    def longest_gaps(self, start: float, end: float) -> list[float]:
        """Per partition, the longest time between `start`, its acknowledgements and `end`."""
        with self.lock:
            times = [sorted(acked for _, acked in self.acked_at[p]) for p in range(PARTITIONS)]
        return [max(b - a for a, b in zip([start, *acked], [*acked, end], strict=True)) for acked in times]

    def resumed_after(self, partitions: set[int], fault_at: float) -> float | None:
        """Seconds from the fault until every one of `partitions` acknowledged a record sent after it."""
        with self.lock:
            firsts = [min((acked for sent, acked in self.acked_at[p] if sent > fault_at), default=None)
                      for p in partitions]
        return None if None in firsts else max(firsts, default=fault_at) - fault_at


def produce(bootstrap: str, history: History, stop: threading.Event, timeouts: dict) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **timeouts})
    numbers = [0] * PARTITIONS
    while not stop.is_set():
        partition = random.randrange(PARTITIONS)
        value = f"{partition}-{numbers[partition]:09d}".encode()
        sent_at = time.monotonic()
        try:
            producer.produce(TOPIC, value, partition=partition,
                             on_delivery=lambda e, m, s=sent_at: history.delivered(s, e, m))
        except BufferError:
            producer.poll(0.01)
            continue
        numbers[partition] += 1
        history.sent += 1
        producer.poll(0)
        time.sleep(0.0005)
    producer.flush(120)


def inject(kind: str, gateways, victim: int, history: History, network) -> tuple[float | None, float | None]:
    """One fault on gateway `victim` (index): seconds until its partitions moved and until produce
    resumed on them (0 when it led none), None for what did not happen within a minute."""
    survivor = gateways[(victim + 1) % len(gateways)]
    led = {p for p, leader in leaders(survivor, TOPIC).items() if leader == victim + 1}
    live = {n + 1 for n in range(len(gateways))} - {victim + 1}
    process = gateways[victim].process
    host = network and network.host(f"gateway-{victim + 1}")
    fault_at = time.monotonic()
    if kind == "kill":
        gateways[victim].kill()
    elif kind == "pause":
        os.killpg(process.pid, signal.SIGSTOP)
    else:
        network.cut(host)
    # every partition led by another: one that rejoined after an earlier fault may lead none
    moved = wait_for(lambda: set(leaders(survivor, TOPIC).values()) <= live, 60)
    if kind == "pause":  # it wakes up deposed, with the requests it had read still to answer
        os.killpg(process.pid, signal.SIGCONT)
    resumed = wait_for(lambda: history.resumed_after(led, fault_at) is not None, 60)
    if kind == "kill":
        gateways[victim].start()
    if kind == "partition":
        network.heal(host)
    return (moved and moved - fault_at), (resumed and history.resumed_after(led, fault_at))


def wait_for(condition, timeout: float) -> float | None:
    """The monotonic time at which `condition()` first held, None if not within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return time.monotonic()
        except Exception:  # a gateway between states: ask again
            pass
        time.sleep(0.1)
    return None


def read_back(bootstrap: str, ends: dict[int, int]) -> dict[int, list[tuple[int, bytes]]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "history-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    found: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(
            (found[p][-1][0] if found[p] else -1) < end - 1 for p, end in ends.items()):
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                found[message.partition()].append((message.offset(), message.value()))
    consumer.close()
    return found


def check(history: History, found: dict[int, list[tuple[int, bytes]]]) -> dict[str, int]:
    lost = duplicates = reordered = offsets_back = unread = 0
    for partition, acknowledged in history.acknowledged.items():
        read = dict(found[partition])
        if max(read, default=-1) < max(acknowledged):  # not read back to its end: unavailable, not lost
            unread += 1
            continue
        lost += sum(read.get(offset) != value for offset, value in acknowledged.items())
    for records in found.values():
        values = [value for _, value in records]
        duplicates += len(values) - len(set(values))
        offsets_back += sum(b[0] <= a[0] for a, b in zip(records, records[1:], strict=False))
        reordered += sum(b <= a for a, b in zip(values, values[1:], strict=False))
    return {"partitions not read back to their end": unread, "acknowledged records lost": lost,
            "duplicates": duplicates,
            "records out of order": reordered, "offsets not increasing": offsets_back}


def spread(seconds: list[float | None]) -> str:
    done = [s for s in seconds if s is not None]
    figures = f"p50 {statistics.median(done):.2f} s, max {max(done):.2f} s" if done else "never"
    return figures + f" ({len(seconds) - len(done)} not within 60 s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--faults", default="kill,pause")
    parser.add_argument("--interval", type=float, default=15, help="seconds between faults")
    parser.add_argument("--dir", help="keep the nodes' data and logs here (default: a temporary directory)")
    parser.add_argument("--client-timeout-ms", type=int,
                        help="the producer's socket.timeout.ms and request.timeout.ms (default: librdkafka's)")
    args = parser.parse_args()
    kinds = args.faults.split(",")
    timeouts = {} if args.client_timeout_ms is None else {
        "socket.timeout.ms": args.client_timeout_ms, "request.timeout.ms": args.client_timeout_ms}
    session_timeout_ms = ChpSettings().chp_session_timeout_ms
    if "partition" in kinds and (reason := unsupported()):
        sys.exit(f"no partition faults here: {reason}")
    with ExitStack() as stack:
        directory = Path(args.dir or stack.enter_context(tempfile.TemporaryDirectory()))
        network = stack.enter_context(private_network()) if "partition" in kinds else None
        gateways = stack.enter_context(gateway_cluster(directory, 3, session_timeout_ms=session_timeout_ms,
                                                       hosts=network.host if network else on_loopback))
        create_topic_through(gateways[0], TOPIC)
        history, stop = History(), threading.Event()
        bootstrap = ",".join(g.bootstrap for g in gateways)
        producing = threading.Thread(target=produce, args=(bootstrap, history, stop, timeouts))
        producing.start()
        times: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
        started_at = time.monotonic()
        end_at = started_at + args.seconds
        try:
            while time.monotonic() < end_at:
                time.sleep(args.interval)
                kind = random.choice(kinds)
                leading = sorted(set(leaders(gateways[0], TOPIC).values()) - {-1})
                times[kind].append(inject(kind, gateways, random.choice(leading) - 1, history, network))
        finally:
            stopped_at = time.monotonic()
            stop.set()
            producing.join()
        ends = {p: max(offsets) + 1 for p, offsets in history.acknowledged.items()}
        found = read_back(bootstrap, ends)
    acknowledged = sum(map(len, history.acknowledged.values()))
    print(f"operations: {history.sent} sent, {acknowledged} acknowledged, {history.failed} failed, "
          f"{history.sent - acknowledged - history.failed} undelivered; session timeout {session_timeout_ms} ms")
    for kind, measured in times.items():
        print(f"{kind}: {len(measured)} faults; partitions moved {spread([m for m, _ in measured])}; "
              f"produce resumed {spread([r for _, r in measured])}")
    gaps = history.longest_gaps(started_at, stopped_at)
    print(f"longest time without an acknowledgement per partition: p50 {statistics.median(gaps):.2f} s, "
          f"max {max(gaps):.2f} s")
    for name, count in check(history, found).items():
        print(f"{name}: {count}")


if __name__ == "__main__":
    main()
