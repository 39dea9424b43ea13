"""librdkafka's own client, rdkafka_performance, against the gateway and Tansu (issue 14 target 2).

The Python client spends 2.5-3 times the broker's CPU on a 100 B record, so on
a small machine it caps what either broker shows; rdkafka_performance is C
throughout. It is not installed here: build it beside the project (librdkafka's
`./configure && make libs && make -C examples rdkafka_performance`) and name it
with --binary. Per round, for each record size and partition count: the same
number of records produced with acks=all (linger.ms=5, batch.size=1000000, as
kafka_throughput.py's producer) into a new topic of each broker, then consumed
from the beginning by a consumer group of one. Brokers alternate within a round;
medians over the rounds are printed with the machine's load. Speed never fails.

    python bench/rdkafka_performance.py --binary PATH [--rounds 3] [--records 2000000]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kafka_throughput import Target, create_topic, load, start_gateway, start_tansu  # noqa: E402

PRODUCER = ("-a", "-1", "-X", "linger.ms=5", "-X", "batch.size=1000000", "-X", "queue.buffering.max.kbytes=1048576",
            "-X", "queue.buffering.max.messages=1000000")
# kafka_throughput.py's consumer limits. With librdkafka's (1 MB a partition) a broker that keeps
# to them answers one batch of about 1 MB a fetch; Tansu answered about 5.8 MB a fetch of one
# partition (librdkafka's statistics: 74 Fetch requests for 431 MB), past the partition's limit.
# And its pause of fetch.queue.backoff.ms (1 s) whenever 100,000 records wait unread: the tool's
# group mode takes about 2.5 M records/s, so a broker that answers faster gets one such pause in
# a run of 4 M (kafka_throughput.py's UNPAUSED_FETCHES).
CONSUMER = ("-X", "fetch.max.bytes=67108864", "-X", "max.partition.fetch.bytes=16777216",
            "-X", "fetch.queue.backoff.ms=10")
# Its summary lines: "% 2000000 messages produced (200000000 bytes), 1234 ms, 1620000 msgs/s, 162.07 MB/s"
# and "% 2000000 messages (200000000 bytes) consumed in 1234ms: 1620000 msgs/s (162.07 MB/s)"
RATE = re.compile(r"(\d+) msgs/s")
SIZES = (100, 1000)


def run_tool(binary: str, *arguments: str) -> float:
    """Messages per second that one rdkafka_performance run reported."""
    done = subprocess.run([binary, "-q", *arguments], capture_output=True, text=True, timeout=300)
    rates = RATE.findall(done.stdout + done.stderr)
    if done.returncode or not rates:
        raise RuntimeError(f"rdkafka_performance {' '.join(arguments)} failed: {done.stderr[-500:]}")
    return float(rates[-1])


def produce(binary: str, target: Target, topic: str, size: int, records: int) -> float:
    return run_tool(binary, "-P", "-t", topic, "-b", target.bootstrap, "-s", str(size), "-c", str(records), *PRODUCER)


def consume(binary: str, target: Target, topic: str, records: int) -> float:
    """As a consumer group's one member, from the earliest offsets; the tool's clock starts at the
    first record, so the group's join is not counted. (Its -C mode with several -p partitions
    received nothing from either broker here.)"""
    return run_tool(binary, "-G", f"group-{topic}", "-t", topic, "-b", target.bootstrap,
                    "-X", "auto.offset.reset=earliest", *CONSUMER, "-c", str(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, help="path of a built rdkafka_performance")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=2_000_000, help="100 B records a run (1 KB: a quarter)")
    parser.add_argument("--partitions", default="1,4")
    arguments = parser.parse_args()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-rdkafka-")))
        tansu = start_tansu(stack, directory)
        if tansu is None:
            sys.exit("nothing to compare with")
        targets = [start_gateway(stack, directory), Target("tansu", tansu)]
        figures: dict[tuple, list[float]] = {}
        for _ in range(arguments.rounds):
            for partitions in (int(p) for p in arguments.partitions.split(",")):
                for size in SIZES:
                    records = arguments.records if size == 100 else arguments.records // 4
                    for target in targets:
                        topic = create_topic(target, partitions)
                        made = produce(arguments.binary, target, topic, size, records)
                        read = consume(arguments.binary, target, topic, records)
                        figures.setdefault(("produce", size, partitions, target.name), []).append(made)
                        figures.setdefault(("consume", size, partitions, target.name), []).append(read)
                        print(f"{target.name:8s} P={partitions} {size:5d} B produce {made / 1e3:8.1f} "
                              f"consume {read / 1e3:8.1f} k msg/s ({load()})", flush=True)
        report(figures, [t.name for t in targets])


def report(figures: dict[tuple, list[float]], names: list[str]) -> None:
    print(f"\nmedians, k msg/s: {' / '.join(names)}, ratio ({load()})")
    for (kind, size, partitions, name) in figures:
        if name != names[0]:
            continue
        ours, theirs = (statistics.median(figures[(kind, size, partitions, n)]) for n in names)
        print(f"{kind:8s} {size:5d} B P={partitions}: {ours / 1e3:8.1f} / {theirs / 1e3:8.1f}  {ours / theirs:5.2f}x")


if __name__ == "__main__":
    main()
