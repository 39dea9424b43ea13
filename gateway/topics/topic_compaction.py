"""Compacted topics: which they are, and the loop that moves what the stores may clean.

Every log.cleaner.backoff.ms the gateway works out, for each partition of a
compacted topic, how far the stores may clean it (`PartitionLog.compaction`)
and sends it in the partition's discard directive; the stores' cleaners do
the rest (gateway/mesh/store/cleaner.py).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from gateway.partitions.cleaning_points import CompactionConfig
from gateway.settings.table import BrokerSettings
from gateway.topics.topic import Topic
from gateway.wall_clock import now_ms
from protocol.journal.discard_directive import Discard


def policies(topic: Topic, settings: BrokerSettings) -> set[str]:
    return set(topic.config("cleanup.policy", settings).split(","))


def is_compacted(topic: Topic, settings: BrokerSettings) -> bool:
    return not topic.native and "compact" in policies(topic, settings)


def compaction_config(topic: Topic, settings: BrokerSettings) -> CompactionConfig:
    def number(name: str) -> int:
        return int(topic.config(name, settings))

    return CompactionConfig(number("segment.ms"), number("segment.bytes"), number("min.compaction.lag.ms"),
                            number("max.compaction.lag.ms"), number("delete.retention.ms"),
                            float(topic.config("min.cleanable.dirty.ratio", settings)))


def partition_discards(topic: Topic, settings: BrokerSettings) -> list[Discard]:
    """The directives of a gateway topic's partitions as journaled, with the last
    compaction of each if the topic is compacted."""
    compacted = is_compacted(topic, settings)
    directives = []
    for state, partition in zip(topic.partition_states, topic.partitions, strict=False):
        last = partition.cleaning.last if compacted and partition is not None else None  # None: led elsewhere
        if state.first_sequence > 0 or last is not None:
            directives.append(Discard(topic.name, state.address, state.first_sequence, last))
    return directives


async def keep_cleaning_points_moving(topics: dict[str, Topic], current: Callable[[], BrokerSettings], send,
                                      interval_ms: int) -> None:
    """Send each compacted partition's directive when what may be cleaned moved; once
    without compaction when its topic stops being compacted. Then read the ABORT markers
    the stores may have emptied, so that the partitions forget their transactions."""
    sent: dict[str, object] = {}  # address -> the compaction last sent
    while True:
        await trio.sleep(interval_ms / 1000)
        now, settings = now_ms(), current()  # the broker settings of the moment: dynamic ones change
        directives, compacted_partitions = [], []
        for topic in list(topics.values()):
            compacted = is_compacted(topic, settings)
            config = compaction_config(topic, settings) if compacted else None
            for state, partition in zip(topic.partition_states, topic.partitions, strict=False):
                if partition is None:  # led by another gateway of the cluster, which sends its directives
                    continue
                compaction = partition.compaction(config, now) if compacted else None
                if sent.get(state.address) != compaction:
                    directives.append(Discard(topic.name, state.address, state.first_sequence, compaction))
                    sent[state.address] = compaction
                if compacted:
                    compacted_partitions.append(partition)
        await send(directives)
        with trio.move_on_after(interval_ms / 1000):  # stores not answering hold nothing else up
            async with trio.open_nursery() as nursery:
                for partition in compacted_partitions:
                    nursery.start_soon(partition.forget_emptied_markers)
