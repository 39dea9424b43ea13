"""Produce at 100 B with acks=1 and with acks=all, side by side, against the gateway.

Per round and acks: the throughput of confluent-kafka producing as fast as it can
(kafka_throughput.py's run), then the delivery rate and latency of records offered
at a fixed rate with linger.ms=0 (offered_rate.py's run). acks=1 waits for one
store and acks=all for min.insync.replicas (one by default), so with one store the
two should match. Figures are printed with the machine's load; speed never fails.

    python bench/acks_throughput.py [--seconds 5] [--rounds 4] [--rate 10000]
"""

from __future__ import annotations

import argparse
import tempfile
from contextlib import ExitStack
from pathlib import Path

import kafka_throughput
from kafka_throughput import create_topic, load, produce_confluent, start_gateway
from offered_rate import offer, summary

SIZE = 100


def order(round_: int) -> tuple[str, str]:
    """acks=1 first in even rounds, acks=all first in odd ones: the first run after another
    differs (warm-up, the previous run's writes still being synced), and so cancels out."""
    return ("1", "all") if round_ % 2 == 0 else ("all", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each run")
    parser.add_argument("--rounds", type=int, default=4, help="runs per acks, interleaved")
    parser.add_argument("--rate", type=int, default=10000, help="offered records per second")
    arguments = parser.parse_args()
    with ExitStack() as stack:
        target = start_gateway(stack, Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-acks-"))))
        print(f"{SIZE} B records, one partition, the gateway with one store; {load()}")
        for round_ in range(arguments.rounds):
            for acks in order(round_):
                kafka_throughput.PRODUCER_SETTINGS["acks"] = acks
                count, elapsed = produce_confluent(target, create_topic(target, 1), SIZE, arguments.seconds)
                print(f"round {round_ + 1} acks={acks:3s} as fast as it goes: {count / elapsed / 1000:7.1f} k msg/s  "
                      f"({load()})", flush=True)
        for round_ in range(arguments.rounds):
            for acks in order(round_):
                delivered, latencies = offer(target, create_topic(target, 1), arguments.rate, arguments.seconds,
                                             {"acks": acks})
                print(f"round {round_ + 1} acks={acks:3s} offered {arguments.rate}/s: "
                      f"{summary(delivered, latencies)}  ({load()})", flush=True)


if __name__ == "__main__":
    main()
