"""Group members as child processes, and topics to share, for the consumer-group tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Member:
    """A running `tests.gateway.group_member`: what it was assigned and what it consumed."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str, instance: str = "",
                 assignor: str = ""):
        self.subscribed = time.monotonic()
        self.first_record_s: float | None = None
        self.assigned: list[int] | None = None
        self.assignments: list[list[int]] = []
        self.records: list[tuple[int, int, str]] = []
        self.committed = 0  # how many of `records` are committed
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.gateway.group_member", client, bootstrap, topic, group, instance, assignor],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            event = json.loads(line)
            if "subscribing" in event:
                self.subscribed = time.monotonic()  # the client is imported: the clock starts here
            elif "assigned" in event:
                self.assigned = event["assigned"]
                self.assignments.append(event["assigned"])
            elif "committed" in event:
                self.committed = len(self.records)
            else:
                if self.first_record_s is None:
                    self.first_record_s = time.monotonic() - self.subscribed
                self.records.append(tuple(event["record"]))

    def close(self) -> None:
        """Close the consumer (it leaves the group) and wait for the process."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()


def wait_until(condition, timeout: float, what: str) -> float:
    """Seconds until `condition()` held; AssertionError after `timeout`."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for n, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=n % partitions)
    assert producer.flush(30) == 0


def share_without_overlap(members: list[Member], partitions: int) -> bool:
    """Whether the members' current assignments split the partitions exactly."""
    owned = [p for m in members for p in (m.assigned or [])]
    return sorted(owned) == list(range(partitions))
