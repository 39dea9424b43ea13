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


def consumed_once(members: list[Member], expected: int) -> bool:
    records = [r for m in members for r in m.records]
    assert len(records) == len(set(records)), "a record was consumed twice"
    return len(records) == expected


def leave_then_die(members: list[Member], bootstrap: str, topic: str, partitions: int,
                   session_timeout_s: float) -> tuple[float, float]:
    """Three members that consumed 60 records: the first closes, the second is
    SIGKILLed; their partitions move and 60 more records are each consumed
    once. Seconds until the partitions moved, after the leave and the death."""
    leaving, dying, staying = members
    leaving.close()
    after_leave = wait_until(lambda: share_without_overlap([dying, staying], partitions), 20,
                             "partitions of the member that left move")
    produce(bootstrap, topic, [f"b{n}" for n in range(30)], partitions)
    wait_until(lambda: consumed_once(members, 90), 30, "records after the leave are consumed")

    wait_until(lambda: dying.committed == len(dying.records), 10, "the member to die committed its records")
    dying.kill()
    after_death = wait_until(lambda: staying.assigned == list(range(partitions)), session_timeout_s + 15,
                             "partitions of the killed member move")
    produce(bootstrap, topic, [f"c{n}" for n in range(30)], partitions)
    wait_until(lambda: consumed_once(members, 120), 30, "records after the death are consumed")
    return after_leave, after_death



def assert_resumes_at(consumer, topic: str, offsets: dict[int, int]) -> None:
    """A confluent-kafka `consumer` subscribed to `topic` reads each partition first at its offset in `offsets`."""
    consumer.subscribe([topic])
    first: dict[int, int] = {}
    wait_until(lambda: _first_offsets(consumer, first) == len(offsets), 60, "records from every partition")
    assert first == offsets


def _first_offsets(consumer, first: dict[int, int]) -> int:
    for message in consumer.consume(num_messages=100, timeout=0.2):
        if message.error() is None:
            first.setdefault(message.partition(), message.offset())
    return len(first)
