"""CPU per small Produce request: what the gateway and its store spend on each.

A fixed number of acks=all Produce requests, each one batch of one 100 B record,
sent on one connection with `--in-flight` of them pipelined (librdkafka's
max.in.flight of 5 by default), as a producer with linger.ms=0 sends them when
records come one at a time. The CPU the gateway's process and its embedded
store's process used (utime + stime, from /proc) is divided by the requests:
a figure that moves little with the machine's load, unlike a rate. The client
is raw sockets, so that each request holds exactly one record.

With --per-task the gateway and its store run with bench/task_cpu on their path,
which counts the CPU of each trio task's steps: printed per request, it shows
which task (reading requests, writing answers, taking ACKs, committing) costs
what, and how many wake-ups ("steps") each request takes.

    python bench/produce_cpu.py [--requests 20000] [--in-flight 5] [--rounds 3] [--per-task]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_throughput import Target, create_topic, load, start_gateway  # noqa: E402 - beside this file
from process_cpu import CpuMeter  # noqa: E402

from protocol.kafka import decode_response, encode_request  # noqa: E402
from protocol.kafka.apis import by_name  # noqa: E402
from protocol.kafka.error_codes import ErrorCode  # noqa: E402
from protocol.records.builder import build_batch  # noqa: E402
from protocol.records.record import Record  # noqa: E402

PRODUCE = by_name("Produce")
VERSION = 9
SIZE = 100
SIZE_PREFIX = struct.Struct(">i")
CORRELATION_AT = SIZE_PREFIX.size + 4  # after the size prefix, api key and version
TASK_CPU_SETTLE_S = 1.5  # bench/task_cpu writes its totals once a second: the last before and the first after a round


def produce_frame(topic: str) -> bytearray:
    """A framed acks=all Produce of one 100 B record to partition 0 (correlation id 0)."""
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=bytes(SIZE))])
    Data = PRODUCE.Request.TopicData
    body = PRODUCE.Request(acks=-1, timeout_ms=30_000, topic_data=[
        Data(name=topic, partition_data=[Data.PartitionData(index=0, records=batch)])])
    request = encode_request(PRODUCE.key, VERSION, 0, "produce-cpu", body)
    return bytearray(SIZE_PREFIX.pack(len(request)) + request)


def run(bootstrap: str, topic: str, requests: int, in_flight: int) -> float:
    """Send `requests` one-record Produce requests, `in_flight` at a time; seconds taken."""
    host, port = bootstrap.rsplit(":", 1)
    frame = produce_frame(topic)
    with socket.create_connection((host, int(port))) as sock:
        reader = sock.makefile("rb")
        started = time.perf_counter()
        sent = answered = 0
        while answered < requests:
            while sent < requests and sent - answered < in_flight:
                sent += 1
                struct.pack_into(">i", frame, CORRELATION_AT, sent)
                sock.sendall(frame)
            answered += 1
            _check(reader, answered)
        return time.perf_counter() - started


def _check(reader, expected_correlation: int) -> None:
    size = SIZE_PREFIX.unpack(reader.read(SIZE_PREFIX.size))[0]
    correlation, response = decode_response(PRODUCE.key, VERSION, reader.read(size))
    answer = response.responses[0].partition_responses[0]
    if correlation != expected_correlation or answer.error_code != ErrorCode.NONE:
        raise RuntimeError(f"answer {correlation} (expected {expected_correlation}): {answer}")


def task_cpu(prefix: Path) -> dict[int, dict[str, list[float]]]:
    """pid -> task name -> [CPU seconds, steps] so far, as bench/task_cpu wrote them."""
    return {int(path.suffix[1:]): json.loads(path.read_text()) for path in prefix.parent.glob(prefix.name + ".*")
            if path.suffix[1:].isdigit()}


def print_task_cpu(before: dict, after: dict, requests: int, names: dict[int, str]) -> None:
    for pid, totals in after.items():
        earlier = before.get(pid, {})
        used = {task: [now - then for now, then in zip(figures, earlier.get(task, [0.0, 0]), strict=True)]
                for task, figures in totals.items()}
        print(f"  {names.get(pid, pid)}, per request:")
        for task, (seconds, steps) in sorted(used.items(), key=lambda item: -item[1][0])[:6]:
            print(f"    {seconds / requests * 1e6:7.1f} µs {steps / requests:5.2f} steps  {task}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="where the temporary gateway data goes")
    parser.add_argument("--requests", type=int, default=20_000, help="Produce requests of each round")
    parser.add_argument("--in-flight", type=int, default=5, help="requests pipelined on the connection")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-task", action="store_true", help="also the CPU of each trio task per request")
    arguments = parser.parse_args()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cpu-", dir=arguments.data_dir)))
        tasks = directory / "task-cpu"
        if arguments.per_task:  # inherited by the gateway and its store
            os.environ["BENCH_TASK_CPU"] = str(tasks)
            instrument = str(Path(__file__).resolve().parent / "task_cpu")  # before a PYTHONPATH of another build
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [instrument, os.environ.get("PYTHONPATH")]))
        gateway: Target = start_gateway(stack, directory)
        topic = create_topic(gateway, 1)
        run(gateway.bootstrap, topic, 1000, arguments.in_flight)  # warm up
        print(f"{arguments.requests} Produce requests of one {SIZE} B record, acks=all, "
              f"{arguments.in_flight} in flight; {load()}")
        meter = CpuMeter(gateway.pid)
        figures = []
        for round_ in range(arguments.rounds):
            if arguments.per_task:
                time.sleep(TASK_CPU_SETTLE_S)
            tasks_before = task_cpu(tasks)
            meter.reset()
            seconds = run(gateway.bootstrap, topic, arguments.requests, arguments.in_flight)
            used = meter.used()
            figures.append({name: (u + s) / arguments.requests * 1e6 for name, (u, s) in used.items()})
            print(f"round {round_ + 1}: {arguments.requests / seconds:8.0f} requests/s; "
                  f"CPU per request: {meter.per(arguments.requests)}  ({load()})", flush=True)
            if arguments.per_task:
                time.sleep(TASK_CPU_SETTLE_S)
                print_task_cpu(tasks_before, task_cpu(tasks), arguments.requests,
                               {pid: name for name, pid in meter.pids.items()})
        medians = {name: statistics.median(f[name] for f in figures) for name in figures[0]}
        print("median CPU per request: " + "; ".join(f"{name} {us:.0f} µs" for name, us in medians.items()))


if __name__ == "__main__":
    main()
