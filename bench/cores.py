"""Use the cores: one cluster of 1, then 2 gateway processes on this host (issue 14 target 4).

Each configuration starts its own cluster: a CHP server, a tower, `--stores` stores and the
gateways (node ids 1..N, the first the controller), each a process, on a temporary directory.
A topic of `--partitions` partitions is made; the controller spreads their leadership over the
gateways. Then acks=all produce of 1 KB and of 100 B records for `--seconds`, from `--clients`
confluent-kafka producers, each in a process of its own so that one client's core does not cap
the figure, and consume of what was produced, the partitions shared out between as many
consumer processes (the 1 KB and 100 B records together). Configurations alternate round by
round (1, 2, 1, 2, ...), as the machine is shared. With `--cpus` (given once per CPU set, e.g.
`--cpus 0 --cpus 0,1`) each configuration also runs with every process of it, servers and
clients, held to each CPU set in turn (sched_setaffinity): how throughput grows from one core to
two with 1 and with 2 gateways is the shape of the curve a bigger machine would extend.

Printed per run: messages/s and MB/s, the cores each process used over the run (CPU seconds
per second, from /proc): every gateway, store, the tower, the CHP server, and the clients
together; then the CPU per record of the servers and of the clients. With two gateways the
partitions' work is split between them, but every store still takes every record (each store
is a replica of all partitions), so the CPU columns show where the second core goes.

    python bench/cores.py [--gateways 1,2] [--rounds 2] [--seconds 5] [--partitions 4] [--clients 2] [--stores 1]
                          [--cpus 0 --cpus 0,1]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kafka_throughput import MB, PRODUCER_SETTINGS, load  # noqa: E402 - beside this file
from process_cpu import cpu_seconds  # noqa: E402

from gateway.testing.broker_process import children  # noqa: E402
from tests.gateway.test_cluster import gateway_cluster, leaders  # noqa: E402

TOPIC = "cores"
SIZES = (1000, 100)
CONSUME_TIMEOUT_S = 120
# A server process's label from its command line: what runs in it
ROLES = (("gateway.chp.chp_server", "chp"), ("gateway.mesh.tower", "tower"), ("gateway.mesh.store", "store"))


def produce_for(bootstrap: str, size: int, seconds: float, cpus: set[int]) -> tuple[int, float, float, float]:
    """One client process on `cpus`: (records, wall start, wall end, CPU seconds) of acks=all produce
    for about `seconds`, flush included; the default partitioner spreads records over partitions."""
    os.sched_setaffinity(0, cpus)
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    payload = os.urandom(size)
    count, started = 0, time.time()
    cpu = time.process_time()
    while time.time() - started < seconds:
        for _ in range(1000):
            while True:
                try:
                    producer.produce(TOPIC, payload)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    producer.poll(0.005)
        count += 1000
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("records left undelivered")
    return count, started, time.time(), time.process_time() - cpu


def consume_all(bootstrap: str, ends: dict[int, int], cpus: set[int]) -> tuple[int, int, float, float, float]:
    """One client process on `cpus`: (records, bytes, wall start, wall end, CPU seconds) of reading
    the partitions `ends` names from offset 0 to those ends."""
    os.sched_setaffinity(0, cpus)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cores", "enable.auto.commit": False,
                         "fetch.max.bytes": 64 * 1024 * 1024, "max.partition.fetch.bytes": 16 * 1024 * 1024})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    expected, received, size = sum(ends.values()), 0, 0
    started, cpu = time.time(), time.process_time()
    while received < expected and time.time() < started + CONSUME_TIMEOUT_S:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                size += len(message)
                received += 1
    ended = time.time()
    consumer.close()
    return received, size, started, ended, time.process_time() - cpu


def servers() -> dict[str, int]:
    """Label -> pid of every server process this bench started (children of this process)."""
    found = {}
    for pid in children(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        words = [word.decode() for word in command]
        if "gateway" in words and "--node-id" in words:
            found[f"gateway-{words[words.index('--node-id') + 1]}"] = pid
        for module, role in ROLES:
            if module in words:
                db = next((w.rsplit("-", 1)[1] for w in words if w.startswith("--store-db=")), "")
                found[f"{role}-{db}" if db else role] = pid
    return found


class Cpu:
    """CPU seconds each server process used since the meter was made."""

    def __init__(self):
        self.pids = servers()
        self.start = {name: sum(cpu_seconds(pid)) for name, pid in self.pids.items()}

    def used(self) -> dict[str, float]:
        return {name: sum(cpu_seconds(self.pids[name])) - start for name, start in self.start.items()}


def wait_spread(gateway, partitions: int, nodes: set[int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = leaders(gateway, TOPIC)
        if len(found) == partitions and set(found.values()) == nodes:
            return
        time.sleep(0.2)
    raise RuntimeError(f"leadership not spread over {sorted(nodes)}: {leaders(gateway, TOPIC)}")


def end_offsets(bootstrap: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cores-ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(partitions)}
    finally:
        consumer.close()


def report(label: str, records: int, size: int, span: float, server_cpu: dict[str, float],
           client_cpu: float) -> None:
    """A run's rates; the cores each process used (CPU seconds per second of the run), and the CPU
    of a record in the servers and in the clients (what stays comparable under a varying load)."""
    cores = " ".join(f"{name} {seconds / span:.2f}" for name, seconds in {**server_cpu, "clients": client_cpu}.items()
                     if seconds >= 0.01)
    per_record = f"servers {sum(server_cpu.values()) / records * 1e6:.1f} clients {client_cpu / records * 1e6:.1f}"
    print(f"{label:30s} {records / span / 1e3:8.1f} k msg/s {size / span / MB:7.1f} MB/s | cores: {cores} | "
          f"CPU µs/record: {per_record}  ({load()})", flush=True)


def run(pool: ProcessPoolExecutor, gateways: list, cpus: set[int], arguments: argparse.Namespace) -> None:
    count, clients, partitions = len(gateways), arguments.clients, arguments.partitions
    label = f"{count} gateway(s) on CPUs {','.join(map(str, sorted(cpus)))}"
    bootstrap = ",".join(g.bootstrap for g in gateways)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer comes
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(30)
    wait_spread(gateways[0], partitions, set(range(1, count + 1)))
    produced = 0
    for size in SIZES:
        meter = Cpu()
        runs = list(pool.map(produce_for, [bootstrap] * clients, [size] * clients, [arguments.seconds] * clients,
                             [cpus] * clients))
        span = max(r[2] for r in runs) - min(r[1] for r in runs)
        records = sum(r[0] for r in runs)
        produced += records * size
        report(f"{label} produce {size} B", records, records * size, span, meter.used(),
               sum(r[3] for r in runs))
    ends = end_offsets(bootstrap, partitions)
    shares = [{p: ends[p] for p in range(partitions) if p % clients == c} for c in range(clients)]
    meter = Cpu()
    runs = list(pool.map(consume_all, [bootstrap] * clients, shares, [cpus] * clients))
    span = max(r[3] for r in runs) - min(r[2] for r in runs)
    records = sum(r[0] for r in runs)
    if records < sum(ends.values()):
        print(f"consumed {records} of {sum(ends.values())} records within {CONSUME_TIMEOUT_S} s")
    report(f"{label} consume both", records, sum(r[1] for r in runs), span, meter.used(),
           sum(r[4] for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gateways", default="1,2", help="gateway processes of each configuration")
    parser.add_argument("--rounds", type=int, default=2, help="times each configuration runs, alternating")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each produce run")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--clients", type=int, default=2, help="producer processes, and consumer processes")
    parser.add_argument("--stores", type=int, default=1, help="stores of the mesh (every one a replica of all)")
    parser.add_argument("--cpus", action="append", type=lambda text: {int(cpu) for cpu in text.split(",")},
                        help="a CPU set (e.g. 0,1) to hold every process to; once per set (default: all CPUs)")
    arguments = parser.parse_args()
    cpu_sets = arguments.cpus or [os.sched_getaffinity(0)]
    print(f"{os.cpu_count()} CPUs; {arguments.partitions} partitions, {arguments.clients} client processes, "
          f"{arguments.stores} store(s); {load()}", flush=True)
    with ProcessPoolExecutor(arguments.clients, mp_context=multiprocessing.get_context("spawn")) as pool:
        for _ in range(arguments.rounds):
            for cpus, count in itertools.product(cpu_sets, map(int, arguments.gateways.split(","))):
                os.sched_setaffinity(0, cpus)  # the cluster's processes, started from here, inherit it
                with tempfile.TemporaryDirectory(prefix="bench-cores-") as directory, gateway_cluster(
                        Path(directory), count, "--expected-stores", str(arguments.stores),
                        stores="abcdefgh"[:arguments.stores]) as gateways:
                    run(pool, gateways, cpus, arguments)


if __name__ == "__main__":
    main()
