"""Record batch hot-path figures: CRC check, offset stamping, splitting, codecs.

Run: python bench/records.py
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import (
    Codec,  # noqa: E402
    Record,  # noqa: E402
    assign_offsets,  # noqa: E402
    build_batch,  # noqa: E402
    split_records,  # noqa: E402
)

MB = 1024 * 1024


def seconds_per_call(action: Callable[[], object], budget: float = 0.5) -> float:
    """Best of five rounds, each repeating `action` for about budget/5 s."""
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            action()
        elapsed = time.perf_counter() - start
        if elapsed > budget / 5:
            break
        count *= 2
    best = elapsed
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(count):
            action()
        best = min(best, time.perf_counter() - start)
    return best / count


def big_batch() -> bytes:
    """About 1 MB: 1000 records of 1 KiB random values."""
    return build_batch([Record(i, 1_700_000_000_000 + i, None, os.urandom(1024)) for i in range(1000)])


def bench_crc(blob: bytes) -> None:
    (batch,) = split_records(blob).entries
    took = seconds_per_call(batch.verify_crc)
    print(f"verify_crc, {len(blob) / MB:.2f} MB batch: {len(blob) / took / MB / 1024:.2f} GB/s ({took * 1e6:.0f} us)")


def bench_offsets(blob: bytes) -> None:
    buffer = bytearray(blob)
    (batch,) = split_records(memoryview(buffer)).entries
    in_place = seconds_per_call(lambda: assign_offsets(batch, 1234, 5))
    print(f"assign_offsets in place, 1 MB batch: {in_place * 1e6:.2f} us")

    def copying() -> bytes:
        header = bytearray(blob[:16])
        struct.pack_into(">qxxxxi", header, 0, 1234, 5)
        return bytes(header) + blob[16:]

    print(f"  for comparison, new bytes with the offsets: {seconds_per_call(copying) * 1e6:.2f} us")
    stamped = seconds_per_call(lambda: assign_offsets(batch, 1234, 5, log_append_time=1_700_000_000_000))
    print(f"assign_offsets with LogAppendTime (CRC recomputed): {stamped * 1e6:.2f} us")


def bench_split() -> None:
    batches = [
        build_batch([Record(i * 10 + j, 1, b"key", b"value" * 20) for j in range(10)]) for i in range(100)
    ]
    blob = b"".join(batches)
    took = seconds_per_call(lambda: split_records(blob))
    print(f"split_records, 100 batches ({len(blob) / 1024:.0f} KiB): {took * 1e6:.0f} us ({took * 1e4:.2f} us per batch)")
    check = seconds_per_call(lambda: [b.verify_crc() for b in split_records(blob).entries])
    print(f"  split + verify_crc of all 100: {check * 1e6:.0f} us")


def bench_records() -> None:
    records = [
        Record(i, 1_700_000_000_000 + i, b"key-%d" % i, b"value-%06d" % i, (("trace", b"abc"),))
        for i in range(10_000)
    ]
    for codec in Codec:
        blob = build_batch(records, codec=codec)
        build = seconds_per_call(lambda codec=codec: build_batch(records, codec=codec), budget=1.0)
        (batch,) = split_records(blob).entries
        parse = seconds_per_call(batch.records, budget=1.0)
        print(
            f"10k small records, {codec.name:6}: build {build * 1e3:6.1f} ms "
            f"({len(records) / build / 1e3:4.0f} k rec/s), parse {parse * 1e3:6.1f} ms "
            f"({len(records) / parse / 1e3:4.0f} k rec/s), {len(blob) / 1024:.0f} KiB"
        )


def main() -> None:
    blob = big_batch()
    bench_crc(blob)
    bench_offsets(blob)
    bench_split()
    bench_records()


if __name__ == "__main__":
    main()
