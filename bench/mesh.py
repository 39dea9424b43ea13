"""Producer -> store -> ACK throughput, ACK latency and store replay, in one process.

Tower, store (real StoreLog, fsync per batch), producer and consumer run in
this process: the store on a trio loop of its own in a thread (as in a process
of its own, its inline commits stall only its own loop), the others as trio
tasks of the main loop; figures are printed, never judged. On a shared
machine wall-clock rates follow the load: cpu/record (the whole process's CPU
time per record) does not, so compare changes by it.
Usage: python -m bench.mesh [--seconds 5] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import trio

from gateway.logging_setup import configure_logging
from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import Producer
from gateway.mesh.store.store_node import run_store
from gateway.mesh.tower import run_tower
from gateway.settings.table import LoggingSettings, MeshSettings, StoreSettings
from gateway.zmq_trio import zmq_context


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def run_store_on_own_loop(context, config, store, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """run_store in a thread running a trio loop of its own, until cancelled."""
    outer = trio.lowlevel.current_trio_token()
    started = trio.Event()
    stop = []

    async def own_loop() -> None:
        async with trio.open_nursery() as nursery:
            stop.append(partial(trio.lowlevel.current_trio_token().run_sync_soon, nursery.cancel_scope.cancel))
            await nursery.start(run_store, context, config, store)
            outer.run_sync_soon(started.set)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(trio.to_thread.run_sync, trio.run, own_loop))
        await started.wait()
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            stop[0]()  # the thread then ends, and the nursery waits for it


async def throughput(partition, size: int, seconds: float, window: int, batch: int) -> tuple[float, float]:
    """Records published `batch` at a time (publish_many), at most `window` ahead of the ACKs."""
    contents = [b"x" * size] * batch
    start, cpu_start = time.perf_counter(), time.process_time()
    count = 0
    while time.perf_counter() - start < seconds:
        if count + batch > window:
            await partition.wait_acked(count + batch - 1 - window, 1)
        await partition.publish_many(contents)
        count += batch
    await partition.wait_acked(count - 1, 1)
    elapsed = time.perf_counter() - start
    cpu_us = (time.process_time() - cpu_start) / count * 1e6  # all nodes and ZeroMQ's I/O thread
    return count / elapsed, count * size / elapsed / 1e6, cpu_us


async def latency(partition, size: int, count: int, gap_s: float) -> tuple[list[float], float]:
    """ACK latencies (ms) of records published one at a time, and the CPU time per record (us):
    one commit each, so this shows a commit's fixed cost."""
    content = b"x" * size
    samples = []
    cpu_start = time.process_time()
    for _ in range(count):
        start = time.perf_counter()
        sequence = await partition.publish(content)
        await partition.wait_acked(sequence, 1)
        samples.append((time.perf_counter() - start) * 1000)
        await trio.sleep(gap_s)
    return sorted(samples), (time.process_time() - cpu_start) / count * 1e6


async def replay(consumer, partition, size: int, count: int, chunk: int) -> tuple[float, float]:
    """A consumer reads [0, count) of `partition` from the store, `chunk` records per FETCH."""
    start, cpu_start = time.perf_counter(), time.process_time()
    for first in range(0, count, chunk):
        records = await consumer.read(partition.subject, partition.uuid, first, min(chunk, count - first), timeout=30)
        assert len(records) == min(chunk, count - first), (first, len(records))
    elapsed = time.perf_counter() - start
    return count / elapsed, count * size / elapsed / 1e6, (time.process_time() - cpu_start) / count * 1e6


async def main(seconds: float, parent: str | None) -> None:
    sub, pub = free_port(), free_port()
    with tempfile.TemporaryDirectory(dir=parent) as directory, zmq_context() as context:
        config = MeshSettings(beacon_sub_address=(f"tcp://127.0.0.1:{sub}",), beacon_pub_address=(f"tcp://127.0.0.1:{pub}",),
                              tower_sub_address=f"tcp://127.0.0.1:{sub}", tower_pub_address=f"tcp://127.0.0.1:{pub}",
                              beacon_interval_ms=200)
        store = StoreSettings(store_db=Path(directory) / "store")
        producer = Producer(context, config)
        consumer = Consumer(context, config, [])
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(run_tower, context, config)
                await nursery.start(run_store_on_own_loop, context, config, store)
                await nursery.start(producer.run)
                await nursery.start(consumer.run)
                while len(producer.node.peers) < 3:
                    await trio.sleep(0.05)
                await trio.sleep(0.5)
                written = []
                for size, window, batch in ((100, 5000, 1), (100, 5000, 500), (1 << 20, 64, 1)):
                    partition = producer.host(f"bench-{size}-{batch}")
                    rate, mbs, cpu_us = await throughput(partition, size, seconds, window, batch)
                    written.append((partition, size))
                    print(f"producer->store->ACK size={size}B batch={batch} records/s={rate:,.0f} MB/s={mbs:,.1f} "
                          f"cpu/record={cpu_us:,.1f}us", flush=True)
                for size, count, gap_s in ((100, 2000, 0), (1 << 20, 200, 0.01)):
                    samples, cpu_us = await latency(producer.host(f"latency-{size}"), size, count, gap_s)
                    print(f"ACK latency one at a time size={size}B: median={statistics.median(samples):.2f}ms "
                          f"p99={samples[int(len(samples) * 0.99) - 1]:.2f}ms cpu/record={cpu_us:,.1f}us", flush=True)
                for (partition, size), chunk in zip(written[1:], (5000, 16), strict=True):
                    rate, mbs, cpu_us = await replay(consumer, partition, size, partition.next_sequence, chunk)
                    print(f"store replay size={size}B records={partition.next_sequence} "
                          f"records/s={rate:,.0f} MB/s={mbs:,.1f} cpu/record={cpu_us:,.1f}us", flush=True)
                nursery.cancel_scope.cancel()
        finally:
            producer.close()
            consumer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--dir", help="where the store's data directory goes (e.g. /dev/shm: no disk); default: TMPDIR")
    configure_logging(LoggingSettings(log_level="warning"))
    arguments = parser.parse_args()
    trio.run(main, arguments.seconds, arguments.dir)
