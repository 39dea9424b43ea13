"""A producer and a consumer that keep going through faults, each on a thread of its own."""

from __future__ import annotations

import threading

from tests.gateway.clients import Got
from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import Acknowledged, consume_until, produce_until


class Traffic:
    """confluent-kafka producing to every partition of `topic` (acks=all) and reading all of them
    back by assignment, from the block's start to its end."""

    def __init__(self, bootstrap: str, topic: str):
        self.acknowledged: list[Acknowledged] = []
        self.got: list[Got] = []
        self._stops = [threading.Event(), threading.Event()]  # the producer's, the consumer's
        self._threads = [threading.Thread(target=run, args=(bootstrap, topic, into, stop)) for run, into, stop in
                         zip((produce_until, consume_until), (self.acknowledged, self.got), self._stops, strict=True)]

    def __enter__(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        for stop, thread in zip(self._stops, self._threads, strict=True):
            stop.set()
            thread.join()

    def carries_on(self, count: int, timeout: float, what: str) -> None:
        """Until `count` more records were acknowledged and as many more read."""
        acknowledged, got = len(self.acknowledged), len(self.got)
        wait_until(lambda: len(self.acknowledged) >= acknowledged + count and len(self.got) >= got + count,
                   timeout, f"{count} more records produced and read: {what}")

    def read_back(self, timeout: float) -> None:
        """Stop producing, then wait until every record acknowledged was read."""
        self._stops[0].set()
        self._threads[0].join()
        wanted = {(a.partition, a.offset) for a in self.acknowledged}
        wait_until(lambda: wanted <= {(g.partition, g.offset) for g in list(self.got)}, timeout,
                   "every acknowledged record read")

    def errors(self) -> str:
        """What the records read contradict ("" if nothing): offsets not read once each from 0 in
        order, in a partition; acknowledged records read with another value at their offset."""
        lines = []
        for number in sorted({g.partition for g in self.got}):
            offsets = [g.offset for g in self.got if g.partition == number]
            if offsets != list(range(len(offsets))):
                lines.append(f"partition {number}: offsets {offsets[:3]}..{offsets[-3:]} read, not 0.. once each")
        read = {(g.partition, g.offset): g.value for g in self.got}
        lost = [a for a in self.acknowledged if read.get((a.partition, a.offset)) != a.value]
        if lost:
            lines.append(f"{len(lost)} of {len(self.acknowledged)} acknowledged records not read at their offsets, "
                         f"e.g. {lost[:3]}")
        return "\n".join(lines)
