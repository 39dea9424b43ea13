"""Log compaction: the store cleaner's throughput, and append latency while it runs;
how late a 1 ms sleep wakes while it runs (the GIL wait alone). Prints figures; never
fails on speed.

    python bench/compaction.py [--batches 20000] [--records 10] [--keys 1000] [--codec gzip]
"""

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.mesh.store.cleaner import StoreCleaner  # noqa: E402
from gateway.mesh.store.store_log import StoreLog  # noqa: E402
from protocol.journal.discard_directive import Compaction  # noqa: E402
from protocol.records import Codec, Record, build_batch  # noqa: E402

ADDRESS = "0123456789ABCDEF0123456789ABCDEF"
KEY = ("bench", ADDRESS)
MB = 1024 * 1024
WAKEUP_S = 0.001


def keyed_batches(count: int, records: int, keys: int, codec: Codec) -> list[bytes]:
    """`count` batches of `records` keyed records each, keys cycling over `keys`."""
    batches = []
    for number in range(count):
        base = number * records
        batches.append(build_batch([Record(base + i, base + i, b"key-%d" % ((base + i) % keys), os.urandom(100))
                                    for i in range(records)], codec=codec))
    return batches


def fill(store: StoreLog, batches: list[bytes], start: int = 0) -> None:
    for sequence, content in enumerate(batches, start):
        store.append(*KEY, sequence, content, sequence)
    store.sync()


def size_of(store: StoreLog) -> int:
    return sum(len(entry.content) for entry in store.read(*KEY, 0, 10**9, 10**12))


def cleaner_throughput(directory: Path, batches: list[bytes], records: int) -> None:
    with StoreLog(directory, segment_bytes=8 * MB) as store:
        fill(store, batches)
        before = size_of(store)
        cleaner = StoreCleaner(store, {KEY: Compaction(len(batches), 0, len(batches), 0.5)}, 128 * MB)
        started = time.perf_counter()
        cleaner.clean_due()
        seconds = time.perf_counter() - started
        after = size_of(store)
    print(f"cleaner: {len(batches)} batches, {len(batches) * records} records, {before / MB:.1f} MB "
          f"-> {after / MB:.2f} MB in {seconds:.2f} s: {before / MB / seconds:.1f} MB/s, "
          f"{len(batches) * records / seconds:,.0f} records/s")


def append_latencies(store: StoreLog, batches: list[bytes], start: int, stop: threading.Event) -> list[float]:
    """Seconds of each append and sync of one batch, until `stop` or the batches run out."""
    latencies = []
    for sequence, content in enumerate(batches, start):
        if stop.is_set():
            break
        began = time.perf_counter()
        store.append(*KEY, sequence, content, sequence)
        store.sync()
        latencies.append(time.perf_counter() - began)
    return latencies


def report(what: str, latencies: list[float], unit: str = "appends") -> None:
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99)]
    print(f"{what}: {len(ordered)} {unit}, median {statistics.median(ordered) * 1e6:.0f} us, "
          f"p99 {p99 * 1e6:.0f} us, max {ordered[-1] * 1e6:.0f} us")


def wakeup_delays(stop: threading.Event) -> list[float]:
    """How late each 1 ms sleep wakes up, until `stop`: the wait for the GIL that the
    store's event loop has after each wait for its sockets, without fsync's noise."""
    delays = []
    while not stop.is_set():
        began = time.perf_counter()
        time.sleep(WAKEUP_S)
        delays.append(time.perf_counter() - began - WAKEUP_S)
    return delays


def while_cleaning(store: StoreLog, batches: list[bytes], measure) -> list[float]:
    """What `measure(stop)` returns while a cleaning pass runs in another thread."""
    cleaner = StoreCleaner(store, {KEY: Compaction(len(batches), 0, len(batches), 0.5)}, 128 * MB)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (cleaner.clean_due(), done.set()))
    thread.start()
    measured = measure(done)
    thread.join()
    return measured


def latency_while_cleaning(directory: Path, batches: list[bytes], appended: list[bytes]) -> None:
    with StoreLog(directory, segment_bytes=8 * MB) as store:
        fill(store, batches)
        report("append+fsync, cleaner idle", append_latencies(store, appended, len(batches), threading.Event()))
        head = store.head(*KEY) + 1
        report("append+fsync, cleaner running",
               while_cleaning(store, batches, lambda done: append_latencies(store, appended * 100, head, done)))
    idle = threading.Event()
    threading.Timer(1.0, idle.set).start()
    report("1 ms sleep, lateness, cleaner idle", wakeup_delays(idle), "wake-ups")
    with StoreLog(directory / "wakeups", segment_bytes=8 * MB) as store:
        fill(store, batches)
        report("1 ms sleep, lateness, cleaner running", while_cleaning(store, batches, wakeup_delays), "wake-ups")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20000)
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--codec", choices=[c.name.lower() for c in Codec], default="gzip")
    arguments = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    codec = Codec[arguments.codec.upper()]
    batches = keyed_batches(arguments.batches, arguments.records, arguments.keys, codec)
    appended = keyed_batches(200, arguments.records, arguments.keys, codec)
    directory = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    try:
        print(f"{arguments.codec}, {arguments.keys} keys, {arguments.records} records of 100 bytes a batch")
        cleaner_throughput(directory / "throughput", batches, arguments.records)
        latency_while_cleaning(directory / "latency", batches, appended)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
