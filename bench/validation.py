"""What validating every produced record costs: per batch and per record,
100 B and 1 KB records, uncompressed and with each codec.

For each case: the checks produce made before records were validated (split
the request's records, check the CRC) and the whole of checked_batch now
(those plus validate_batch: inflating and walking every record), on batches
of about 1 MB (confluent-kafka's batch.size in bench/kafka_throughput.py)
and 16 KB (the Java client's default batch.size).

Then the gateway itself (started here): acks=all produce of 100 B and 1 KB
records with confluent-kafka as in bench/kafka_throughput.py, the records per
second and the gateway process's CPU time per record and per MB, a figure
that a busy machine disturbs less than throughput. Before and after a change:
run it in both checkouts (the gateway is `python -m gateway` in the current
directory; the checks measured first are this checkout's).

    python bench/validation.py [--seconds 5] [--gateway-only]
    cd OTHER_CHECKOUT && PYTHONPATH=. python THIS_CHECKOUT/bench/validation.py --gateway-only
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_throughput import Target, create_topic, load, produce_confluent  # noqa: E402 - beside this file
from records import seconds_per_call  # noqa: E402

from gateway.partitions.batch_checks import checked_batch  # noqa: E402
from gateway.testing.broker_process import BrokerProcess  # noqa: E402
from protocol.records import Codec, Record, build_batch, split_records  # noqa: E402

PRODUCE_VERSION = 9
MAX_MESSAGE_BYTES = 1 << 30  # no size refusal here
BATCH_BYTES = (1_000_000, 16_384)


def sample_batch(record_bytes: int, batch_bytes: int, codec: Codec) -> tuple[bytes, int]:
    """A batch of about `batch_bytes` of records, half random (not all compressible), and its record count."""
    count = max(1, batch_bytes // (record_bytes + 10))
    values = [os.urandom(record_bytes // 2) + bytes(record_bytes - record_bytes // 2) for _ in range(count)]
    records = [Record(n, 1_700_000_000_000 + n // 100, None, value) for n, value in enumerate(values)]
    return build_batch(records, codec=codec), count


def crc_only(buffer: bytearray) -> None:
    for entry in split_records(memoryview(buffer)).entries:
        entry.verify_crc()


def checks_per_batch() -> None:
    print(f"{'records':>8s} {'batch':>9s} {'codec':>6s} {'CRC only':>10s} {'checked':>10s} "
          f"{'validation':>11s} {'per record':>11s} {'validated':>10s}")
    for batch_bytes in BATCH_BYTES:
        for record_bytes in (100, 1000):
            for codec in Codec:
                blob, count = sample_batch(record_bytes, batch_bytes, codec)
                buffer = bytearray(blob)
                before = seconds_per_call(lambda buffer=buffer: crc_only(buffer))
                after = seconds_per_call(lambda buffer=buffer: checked_batch(
                    memoryview(buffer), PRODUCE_VERSION, MAX_MESSAGE_BYTES))
                added = after - before
                print(f"{record_bytes:6d} B {len(blob) / 1024:7.0f} KB {codec.name.lower():>6s} "
                      f"{before * 1e6:8.0f} us {after * 1e6:8.0f} us {added * 1e6:8.0f} us "
                      f"{added / count * 1e9:8.0f} ns {count * record_bytes / after / 1e6:6.0f} MB/s")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def started_gateway(*options: str):
    """A gateway started here (`python -m gateway` in the current directory) with `options`."""
    with tempfile.TemporaryDirectory() as directory:
        broker = BrokerProcess(Path(directory) / "gateway", *options).start()
        try:
            yield broker
        finally:
            broker.stop()


def produce_figures(broker: BrokerProcess, topic: str, size: int, seconds: float) -> str:
    """An acks=all run of confluent-kafka into `topic`: its throughput and the gateway's CPU."""
    used = cpu_seconds(broker.process.pid)
    count, took = produce_confluent(Target("gateway", broker.bootstrap), topic, size, seconds)
    used = cpu_seconds(broker.process.pid) - used
    return (f"{count / took / 1e3:6.0f} k rec/s {count * size / took / 1e6:5.0f} MB/s; gateway CPU "
            f"{used / took:4.0%} of a core, {used / count * 1e9:5.0f} ns per record, "
            f"{used / (count * size) * 1e9:5.2f} ms per MB ({load()})")


def gateway_produce(seconds: float) -> None:
    with started_gateway() as broker:
        for size in (100, 1000):
            topic = create_topic(Target("gateway", broker.bootstrap), 1)
            print(f"produce {size:4d} B acks=all: {produce_figures(broker, topic, size, seconds)}", flush=True)


def main(doc: str = __doc__, per_batch=None, gateway=gateway_produce) -> None:
    """Per-batch figures (unless --gateway-only), then the gateway's; bench/recompression.py's too."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each produce run")
    parser.add_argument("--gateway-only", action="store_true", help="skip the per-batch figures")
    arguments = parser.parse_args()
    if not arguments.gateway_only:
        (per_batch or checks_per_batch)()
    gateway(arguments.seconds)


if __name__ == "__main__":
    main()
