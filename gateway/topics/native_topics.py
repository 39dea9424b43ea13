"""Topics of native Dafka producers, found on the mesh and served as Kafka topics.

A watcher node hears every producer's HEAD (subscription `H`, all topics) and
the RECORDs of the native topics it knows; every store's ACK comes from the
gateway's producer node, which hears them all (`Producer.follow_foreign_acks`),
so that the gateway takes each ACK of its own partitions once. A HEAD, ACK or RECORD from a producer UUID never seen on that
topic gives the topic a new partition (a short-lived producer may never send
a HEAD: the stores' ACKs of its records announce it):
numbers are given in order of discovery and kept in the journal, so they
survive restarts. At start the journaled topics get their heads from the
stores (GET-HEADS), which also reveals producers of them that came and went
meanwhile. Ignored: the gateway's own partitions (any address a topic of
its journal ever had), its internal subjects, subjects of topics created
through the gateway, and subjects that are not legal Kafka topic names.

A topic whose producers stopped, and whose records the stores had ACKed,
before this gateway first heard of it is not found: stores answer GET-HEADS
only for a named topic.
"""

from __future__ import annotations

import uuid

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.native_partition import NativePartition
from gateway.topics.topic import PartitionState, Topic, check_topic_name
from protocol.dafka import Ack, Head, Record, subscription

log = structlog.get_logger()

ENTRY = "native_partition"
INTERNAL_PREFIX = "__dafka_gateway"
RECV_BATCH = 256


def native_topic_id(cluster_id: str, name: str) -> uuid.UUID:
    """The same topic id on every start and every gateway of a cluster."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"dafka-gateway:{cluster_id}:native:{name}")


class NativeTopics:
    def __init__(self, broker):
        self.broker = broker
        self.node = broker.storage.watcher
        self._journaled: dict[tuple[str, int], dict] = {}  # (topic, number) -> latest entry
        self._partitions: dict[tuple[str, str], NativePartition] = {}  # (topic, address)
        self._ignored: set[tuple[str, str]] = set()
        self._acked: dict[tuple[str, str], int] = {}  # (topic, address) -> highest ACK heard, not yet taken
        self._ack_heard = trio.Event()

    def replay(self, entry: dict) -> None:
        self._journaled[(entry["topic"], entry["number"])] = entry

    async def _journal(self, entry: dict) -> None:
        await self.broker.journal.write(entry)
        self._journaled[(entry["topic"], entry["number"])] = entry

    def entries(self) -> list[dict]:
        """The latest journal entry of every native partition (for the journal's compaction)."""
        return list(self._journaled.values())

    def journaled_topics(self) -> set[str]:
        return {name for name, _ in self._journaled}

    async def open(self) -> None:
        """Serve the journaled native topics, at the heads the stores report."""
        for (name, _), entry in sorted(self._journaled.items()):
            self._add(name, entry["address"], entry["log_start_offset"])
        async with trio.open_nursery() as nursery:
            for name in self.journaled_topics():
                nursery.start_soon(self._ask_heads, name)
        log.info("native_topics_opened", topics=len(self.journaled_topics()))

    async def _ask_heads(self, name: str) -> None:
        for address, head in (await self.broker.storage.heads(name)).items():
            partition = await self._found(name, address)
            if partition is not None:
                partition.saw_head(head)

    async def run(self) -> None:
        """Follow HEADs, ACKs and native RECORDs until cancelled."""
        self.node.subscribe(subscription(Head))
        self.broker.storage.producer.follow_foreign_acks(self._heard_ack)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._follow_acks)
            await self._follow_watcher()

    async def _follow_watcher(self) -> None:
        while True:
            for message in await self.node.receive(RECV_BATCH):
                if not isinstance(message, (Head, Record)):
                    continue
                partition = await self._found(message.subject, message.partition)
                if partition is None:
                    continue
                if isinstance(message, Record):
                    partition.saw_record(message.sequence, bytes(message.content))
                else:
                    partition.saw_head(message.sequence)

    def _heard_ack(self, ack: Ack) -> None:
        key = (ack.subject, ack.partition)
        self._acked[key] = max(ack.sequence, self._acked.get(key, -1))
        self._ack_heard.set()

    async def _follow_acks(self) -> None:
        """A store holds a partition up to an ACK's sequence, as a HEAD says; ACKs heard
        meanwhile are taken together (they are cumulative)."""
        while True:
            await self._ack_heard.wait()
            self._ack_heard = trio.Event()
            acked, self._acked = self._acked, {}
            for (name, address), sequence in acked.items():
                partition = await self._found(name, address)
                if partition is not None:
                    partition.saw_head(sequence)

    async def _found(self, name: str, address: str) -> NativePartition | None:
        """The native partition of `address` in topic `name`, numbered now if new."""
        partition = self._partitions.get((name, address))
        if partition is not None or not self._acceptable(name, address):
            return partition
        async with self.broker.topic_lock:
            partition = self._partitions.get((name, address))
            if partition is None and self._acceptable(name, address):
                number = len(self.broker.topics[name].partitions) if name in self.broker.topics else 0
                await self._journal(
                    {"type": ENTRY, "topic": name, "number": number, "address": address, "log_start_offset": 0})
                partition = self._add(name, address, 0)
                log.info("native_partition_found", topic=name, partition=number, address=address)
        return partition

    def _acceptable(self, name: str, address: str) -> bool:
        """Whether a partition is native and servable; a refusal is logged once."""
        if (name.startswith(INTERNAL_PREFIX) or address in self.broker.own_addresses
                or (name, address) in self._ignored):
            return False
        topic = self.broker.topics.get(name)
        reason = None
        if topic is not None and not topic.native:
            reason = "a topic of that name was created through the gateway"
        else:
            try:
                check_topic_name(name)
            except KafkaError as exc:
                reason = exc.message
        if reason is not None:
            self._ignored.add((name, address))
            log.warning("native_partition_ignored", topic=name, address=address, reason=reason)
        return reason is None

    def _add(self, name: str, address: str, log_start_offset: int) -> NativePartition:
        topic = self.broker.topics.get(name)
        if topic is None:
            topic = Topic(name, native_topic_id(self.broker.settings.cluster_id, name),
                          self.broker.settings.default_replication_factor, [], native=True)
            self.broker.topics[name] = topic
            self.node.subscribe(subscription(Record, name))
        partition = NativePartition(name, len(topic.partitions), address, self.broker.storage.read,
                                    log_start_offset=log_start_offset)
        topic.partition_states.append(PartitionState(address, log_start_offset))
        topic.partitions.append(partition)
        self._partitions[(name, address)] = partition
        return partition

    async def save_log_start(self, topic: Topic) -> None:
        """Journal the log start offsets DeleteRecords moved (caller holds the topic lock)."""
        for state, partition in zip(topic.partition_states, topic.partitions, strict=True):
            if state.log_start_offset != partition.log_start_offset:
                state.log_start_offset = partition.log_start_offset
                await self._journal(
                    {"type": ENTRY, "topic": topic.name, "number": partition.index,
                     "address": partition.address, "log_start_offset": partition.log_start_offset})
