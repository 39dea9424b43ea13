"""From start to serving: the embedded node on an empty temporary data directory.

Each run starts the gateway as the pytest plugin does (gateway.testing.BrokerProcess)
and times, from the process's start: the first ApiVersions answered, and a
Metadata answered to confluent-kafka's AdminClient. Median, min and max of the
runs, with the machine's load; it never fails on speed.

    python bench/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.testing.broker_process import BrokerProcess  # noqa: E402


def one_start() -> tuple[float, float]:
    """Seconds to ApiVersions answered, and to Metadata answered."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as directory:
        broker = BrokerProcess(Path(directory) / "data")
        started = time.perf_counter()
        broker.start()
        serving = time.perf_counter() - started
        AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30)
        metadata = time.perf_counter() - started
        broker.stop()
        return serving, metadata


def summary(label: str, values: list[float]) -> str:
    return (f"{label}: median {statistics.median(values):.2f} s, "
            f"min {min(values):.2f} s, max {max(values):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print("empty data directory, embedded store, durable; load %.2f %.2f %.2f" % os.getloadavg())
    serving, metadata = zip(*(one_start() for _ in range(runs)), strict=True)
    print(summary("start to ApiVersions answered", list(serving)))
    print(summary("start to Metadata answered   ", list(metadata)))
    print("load %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
