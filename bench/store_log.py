"""Store log throughput and open time. Prints figures; never fails on speed.

    python bench/store_log.py [--directory DIR] [--big-mb 1024] [--small 1000000]
"""

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.mesh.store.store_log import StoreLog  # noqa: E402

ADDRESS = "0123456789ABCDEF0123456789ABCDEF"
MB = 1024 * 1024


def append_rate(directory: Path, content: bytes, count: int, batch: int, fsync: str) -> float:
    """Seconds to append `count` entries, calling sync() after every `batch`."""
    shutil.rmtree(directory, ignore_errors=True)
    with StoreLog(directory, fsync=fsync) as store:
        started = time.perf_counter()
        for sequence in range(count):
            store.append("bench", ADDRESS, sequence, content, sequence)
            if sequence % batch == batch - 1:
                store.sync()
        store.sync()
        return time.perf_counter() - started


def spread_batch_time(directory: Path, partitions: int, rounds: int) -> float:
    """Seconds per batch of one 1 KB entry to each of many partitions, then sync()."""
    shutil.rmtree(directory, ignore_errors=True)
    addresses = [f"{number:032X}" for number in range(partitions)]
    content = os.urandom(1024)
    with StoreLog(directory) as store:
        for address in addresses:
            store.append("bench", address, 0, content, 0)
        store.sync()
        started = time.perf_counter()
        for sequence in range(1, rounds + 1):
            for address in addresses:
                store.append("bench", address, sequence, content, sequence)
            store.sync()
        return (time.perf_counter() - started) / rounds


def raw_write_rate(directory: Path, content: bytes, count: int) -> float:
    """Seconds for plain os.pwrite of the same bytes: what the medium allows."""
    directory.mkdir(exist_ok=True)
    fd = os.open(directory / "raw", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        started = time.perf_counter()
        for number in range(count):
            os.pwrite(fd, content, number * len(content))
        return time.perf_counter() - started
    finally:
        os.close(fd)
        os.unlink(directory / "raw")


def read_rate(directory: Path, max_count: int) -> tuple[float, int]:
    """Seconds and bytes to read the whole partition back."""
    with StoreLog(directory) as store:
        started = time.perf_counter()
        sequence, total = 0, 0
        while entries := list(store.read("bench", ADDRESS, sequence, max_count, 64 * MB)):
            total += sum(len(entry.content) for entry in entries)
            sequence = entries[-1].sequence + 1
        return time.perf_counter() - started, total


def open_time(directory: Path) -> float:
    started = time.perf_counter()
    StoreLog(directory).close()
    return time.perf_counter() - started


def forget_durable_points(directory: Path) -> None:
    """As after a crash before any sync: open must scan and check every entry."""
    for index in directory.glob("*/*/*.idx"):
        with open(index, "r+b") as file:
            file.write(bytes(32))


def report(name: str, seconds: float, count: int, size: int) -> None:
    print(f"{name:<44} {count / seconds:>12,.0f} entries/s {count * size / MB / seconds:>9,.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--directory", type=Path, help="where to write (default: a temporary directory)")
    parser.add_argument("--big-mb", type=int, default=1024, help="1 MB entries to append")
    parser.add_argument("--small", type=int, default=1_000_000, help="100 B entries to append")
    arguments = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    root = Path(tempfile.mkdtemp(dir=arguments.directory))
    try:
        run(root, arguments.big_mb, arguments.small)
    finally:
        shutil.rmtree(root)


def run(root: Path, big_count: int, small_count: int) -> None:
    big, small = os.urandom(MB), os.urandom(100)
    report("baseline: raw os.pwrite 1 MB, no fsync", raw_write_rate(root, big, big_count), big_count, MB)
    for batch in (16, 64):
        report(f"append 1 MB, fsync every {batch}", append_rate(root / "big", big, big_count, batch, "batch"),
               big_count, MB)
    report("append 1 MB, no fsync (interval policy)", append_rate(root / "big", big, big_count, 64, "interval"),
           big_count, MB)
    seconds, total = read_rate(root / "big", 16)
    print(f"{'read 1 MB entries, 16 per read':<44} {total / MB / seconds:>34,.1f} MB/s")
    for batch in (1000, 10_000):
        report(f"append 100 B, fsync every {batch}", append_rate(root / "small", small, small_count, batch, "batch"),
               small_count, 100)
    seconds, total = read_rate(root / "small", 1000)
    report("read 100 B entries, 1000 per read", seconds, small_count, 100)
    for partitions in (1, 100, 1000):
        seconds = spread_batch_time(root / "spread", partitions, 5)
        print(f"batch of 1 KB to {partitions:>5} partitions + sync: {seconds * 1000:9.1f} ms")
    print(f"open {small_count:,} entries after clean close: {open_time(root / 'small'):.3f} s")
    forget_durable_points(root / "small")
    print(f"open {small_count:,} entries, all rescanned:    {open_time(root / 'small'):.3f} s")


if __name__ == "__main__":
    main()
