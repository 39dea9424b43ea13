"""Hostile clients against one gateway: its memory, and a well-behaved client's latency meanwhile.

Starts a gateway (embedded store, default settings, free ports, temporary data)
and runs three attacks on raw sockets, one after the other:

* claims: --claims connections each announcing a 100 MB request, sending
  1 KB of it and then nothing;
* slow loris: --lorises connections each sending part of a small request
  and then nothing (request.receive.timeout.ms closes them after 30 s);
* pipelined fetches: --fetchers connections each sending --pipelined Fetch
  requests (max_bytes 2 GB, from offset 0 of a topic holding --data-mb MB,
  more than a partition keeps in memory) and never reading a byte.

For each, held at least 10 s: the gateway's resident memory (peak while it
lasts, sampled every 50 ms, and once the attackers are gone), and --rounds times a
new confluent-kafka producer's produce (connect, metadata, one record acked)
and a new consumer's fetch of that record. An attack whose gateway grows past
--rss-cap-mb is cut short (so as not to take the machine down). Figures only:
it never fails on speed.

    python bench/hostile_clients.py [--claims 1000] [--lorises 1000] [--fetchers 100] [--pipelined 64]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.testing.broker_process import BrokerProcess  # noqa: E402
from protocol.kafka import encode_request  # noqa: E402
from protocol.kafka.apis import by_name  # noqa: E402

GOOD_TOPIC, DATA_TOPIC = "hostile-good", "hostile-data"
CLIENT_TIMEOUT_S = 30.0
SETTLE_S = 3.0
HOLD_S = 10.0  # an attack lasts at least this long: the gateway has read every connection by then
FETCH = by_name("Fetch").Request
QUIET = {"log_level": 3}  # librdkafka's errors only: its lines on refused connections would bury the figures


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def raise_open_files_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class RssWatch:
    """Samples a process's resident memory in a thread: the peak since `reset`, and whether
    it passed a cap."""

    def __init__(self, pid: int, cap_mb: float):
        self.pid, self.cap_mb = pid, cap_mb
        self.peak = 0.0
        self.over_cap = threading.Event()
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def reset(self) -> None:
        self.peak = resident_mb(self.pid)
        self.over_cap.clear()

    def stop(self) -> None:
        self._stop.set()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.peak = max(self.peak, resident_mb(self.pid))
            except FileNotFoundError:
                return
            if self.peak > self.cap_mb:
                self.over_cap.set()


def framed(request: bytes) -> bytes:
    return struct.pack(">i", len(request)) + request


def fetch_request(correlation: int) -> bytes:
    partition = FETCH.Topics.Partitions(partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                        partition_max_bytes=2**31 - 1)
    return framed(encode_request(1, 11, correlation, "hostile", FETCH(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=2**31 - 1, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[FETCH.Topics(topic=DATA_TOPIC, partitions=[partition])],
        forgotten_topics_data=[], rack_id="")))


def open_attackers(port: int, count: int, first_bytes: bytes, receive_buffer: int | None = None) -> list:
    """Up to `count` connections that each send `first_bytes` and then nothing."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        if receive_buffer:  # set before connecting: the window the gateway may fill
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(first_bytes)
        except OSError as exc:
            print(f"  opened {len(sockets)} of {count}: {exc}", flush=True)
            sock.close()
            break
        sockets.append(sock)
    return sockets


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def good_round(bootstrap: str, number: int) -> tuple[float, float]:
    """A new producer's one record acked, then a new consumer's fetch of it: seconds of each."""
    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **QUIET})
    delivered = []
    producer.produce(GOOD_TOPIC, f"good-{number}".encode(), partition=0,
                     on_delivery=lambda error, message: delivered.append((error, message)))
    producer.flush(CLIENT_TIMEOUT_S)
    if not delivered or delivered[0][0] is not None:
        raise RuntimeError(f"produce failed: {delivered or 'no delivery'}")
    produced = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"good-{number}", "enable.auto.commit": False,
                         **QUIET})
    try:
        consumer.assign([TopicPartition(GOOD_TOPIC, 0, delivered[0][1].offset())])
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                return produced - started, time.perf_counter() - produced
        raise RuntimeError("consume timed out")
    finally:
        consumer.close()


def good_client(bootstrap: str, rounds: int, watch: RssWatch) -> str:
    produce, consume, failures = [], [], []
    for number in range(rounds):
        if watch.over_cap.is_set():
            break
        try:
            seconds = good_round(bootstrap, number)
        except Exception as exc:  # noqa: BLE001 - a client's failure is a figure too
            failures.append(str(exc)[:80])
            continue
        produce.append(seconds[0])
        consume.append(seconds[1])
    if not produce:
        return f"good client: every round failed {failures[:1]}"
    return (f"good client: produce median {statistics.median(produce) * 1000:.0f} ms (max {max(produce) * 1000:.0f}),"
            f" consume median {statistics.median(consume) * 1000:.0f} ms (max {max(consume) * 1000:.0f})"
            + (f", {len(failures)} rounds failed: {failures[0]}" if failures else ""))


def attack(name: str, broker: BrokerProcess, watch: RssWatch, rounds: int, open_them) -> None:
    watch.reset()
    started = time.perf_counter()
    sockets = open_them()
    opened_s = time.perf_counter() - started
    figures = good_client(broker.bootstrap, rounds, watch)
    while time.perf_counter() - started < HOLD_S and not watch.over_cap.is_set():
        time.sleep(0.05)
    lasted = time.perf_counter() - started
    closed = sum(closed_by_peer(sock) for sock in sockets)
    cut = " (cut short: RSS over the cap)" if watch.over_cap.is_set() else ""
    peak = watch.peak
    for sock in sockets:
        sock.close()
    time.sleep(SETTLE_S)
    print(f"{name}: {len(sockets)} connections opened in {opened_s:.1f} s, {closed} closed by the gateway after "
          f"{lasted:.1f} s{cut}; gateway RSS peak {peak:.0f} MB, after {resident_mb(broker.process.pid):.0f} MB; "
          f"{figures}  ({load()})", flush=True)


def fill_data(bootstrap: str, megabytes: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    value = os.urandom(100_000)
    for _ in range(megabytes * 10):
        producer.produce(DATA_TOPIC, value, partition=0)
        producer.poll(0)
    producer.flush(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--lorises", type=int, default=1000)
    parser.add_argument("--fetchers", type=int, default=100)
    parser.add_argument("--pipelined", type=int, default=64)
    parser.add_argument("--data-mb", type=int, default=64)  # beyond tail.bytes.per.partition: read from the store
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rss-cap-mb", type=float, default=4096)
    arguments = parser.parse_args()
    print(f"open files limit of this process: {raise_open_files_limit()}", flush=True)
    directory = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    broker = BrokerProcess(directory / "data", log_path=directory / "gateway.log").start()
    watch = RssWatch(broker.process.pid, arguments.rss_cap_mb)
    try:
        fill_data(broker.bootstrap, arguments.data_mb)
        watch.reset()
        print(f"no attack: gateway RSS {resident_mb(broker.process.pid):.0f} MB; "
              f"{good_client(broker.bootstrap, arguments.rounds, watch)}  ({load()})", flush=True)
        claim = struct.pack(">i", 100 * 1024 * 1024) + bytes(1024)
        attack(f"{arguments.claims} x 100 MB claimed", broker, watch, arguments.rounds,
               lambda: open_attackers(broker.port, arguments.claims, claim))
        loris = struct.pack(">i", 1000) + bytes(10)
        attack(f"{arguments.lorises} slow lorises", broker, watch, arguments.rounds,
               lambda: open_attackers(broker.port, arguments.lorises, loris))
        fetches = b"".join(fetch_request(n) for n in range(arguments.pipelined))
        attack(f"{arguments.fetchers} x {arguments.pipelined} pipelined fetches unread", broker, watch,
               arguments.rounds, lambda: open_attackers(broker.port, arguments.fetchers, fetches, 4096))
        print(f"gateway alive at the end: {broker.process.poll() is None}", flush=True)
    finally:
        watch.stop()
        broker.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
