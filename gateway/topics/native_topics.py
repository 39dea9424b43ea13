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

In a cluster of gateways only the controller numbers partitions (its journal
is the metadata journal) and shares each native topic as it shares the
others (`cluster/topics/`, marked native); every gateway follows the HEADs
and ACKs, and serves the native partitions the controller assigns it
(`lead`), like any partition, at the leader epoch the cluster gives it
(clients take a new leader only with a newer epoch); nothing is fenced, as
no gateway writes it, and its records stay of epoch 0 (NativePartition.led_at).
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
        self.broker = broker  # the topic registry
        self.node = broker.storage.watcher
        self._journaled: dict[tuple[str, int], dict] = {}  # (topic, number) -> latest entry
        self._partitions: dict[tuple[str, str], NativePartition] = {}  # (topic, address): served here
        self._led: dict[tuple[str, int], int] = {}  # in a cluster: (topic id, index) -> leadership epoch served at
        self._records_followed: set[str] = set()  # topics whose RECORDs the watcher hears
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
        """Number the journaled native topics' partitions again (sharing them, in a cluster) and
        serve them, alone, at the heads the stores report."""
        for (name, _), entry in sorted(self._journaled.items()):
            self._number(name, entry["address"], entry["log_start_offset"])
        for name in self.journaled_topics():
            await self.broker.share(self.broker.topics[name])
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
        """The native partition of `address` in topic `name` if served here, numbered now if new
        (a gateway following the controller leaves that to it, and serves what it is assigned)."""
        partition = self._partitions.get((name, address))
        if partition is not None or self._numbered(name, address) or not self._acceptable(name, address):
            return partition
        if self.broker.follows_controller:
            return None
        async with self.broker.topic_lock:
            if not self._numbered(name, address) and self._acceptable(name, address):
                number = len(self.broker.topics[name].partitions) if name in self.broker.topics else 0
                await self._journal(
                    {"type": ENTRY, "topic": name, "number": number, "address": address, "log_start_offset": 0})
                await self.broker.share(self._number(name, address, 0))
                log.info("native_partition_found", topic=name, partition=number, address=address)
        return self._partitions.get((name, address))

    def _numbered(self, name: str, address: str) -> bool:
        topic = self.broker.topics.get(name)
        return topic is not None and topic.native and any(state.address == address
                                                          for state in topic.partition_states)

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

    def _number(self, name: str, address: str, log_start_offset: int) -> Topic:
        """Give `address` the topic's next partition number; served at once by a gateway alone."""
        topic = self.broker.topics.get(name)
        if topic is None:
            topic = Topic(name, native_topic_id(self.broker.settings.cluster_id, name),
                          self.broker.settings.default_replication_factor, [], native=True)
            self.broker.topics[name] = topic
        topic.partition_states.append(PartitionState(address, log_start_offset))
        topic.partitions.append(None)
        if self.broker.sharing is None:
            self._serve(topic, len(topic.partitions) - 1)
        return topic

    def _serve(self, topic: Topic, index: int) -> NativePartition:
        state = topic.partition_states[index]
        partition = NativePartition(topic.name, index, state.address, self.broker.storage.read,
                                    log_start_offset=state.log_start_offset)
        topic.partitions[index] = partition
        self._partitions[(topic.name, state.address)] = partition
        if topic.name not in self._records_followed:
            self._records_followed.add(topic.name)
            self.node.subscribe(subscription(Record, topic.name))
        return partition

    async def lead(self, wanted: dict[tuple[str, int], int]) -> None:
        """In a cluster: serve exactly the native partitions `wanted` names ((topic id, index) ->
        leadership epoch), each newly led one from the heads the stores report, and say so
        (`cluster/serving/`: a gateway handing its partitions over waits for it). Nothing is fenced:
        no gateway writes them. The caller holds the topic lock."""
        taken: dict[str, list[tuple[int, int]]] = {}
        for topic in [t for t in self.broker.topics.values() if t.native]:
            for index, partition in enumerate(topic.partitions):
                key = (str(topic.topic_id), index)
                epoch = wanted.get(key)
                if partition is not None and epoch is None:
                    self.close(topic, index)
                    log.info("partition_leadership_lost", topic=topic.name, partition=index)
                elif epoch is not None and self._led.get(key) != epoch:
                    taken.setdefault(topic.name, []).append((index, epoch))
        for name, indexes in taken.items():
            topic, heads = self.broker.topics[name], await self.broker.storage.heads(name)
            for index, epoch in indexes:
                partition = topic.partitions[index] or self._serve(topic, index)
                partition.saw_head(heads.get(partition.address, -1))
                partition.led_at(epoch)
                self._led[(str(topic.topic_id), index)] = epoch
                await self.broker.sharing.serving(str(topic.topic_id), index, epoch, partition.high_watermark)
                log.info("native_partition_led", topic=name, partition=index, epoch=epoch,
                         high_watermark=partition.high_watermark)

    def close(self, topic: Topic, index: int) -> None:
        """Stop serving a native partition here (its records stay: they are its producer's)."""
        partition, topic.partitions[index] = topic.partitions[index], None
        del self._partitions[(topic.name, partition.address)]
        self._led.pop((str(topic.topic_id), index), None)

    async def journal_log_starts(self, topic: Topic, moved: dict[int, tuple[int, int]]) -> None:
        """Journal, and share, the log start offsets DeleteRecords moved (index -> (offset, first
        sequence), the latter always 0: the stores keep a native producer's records); also reported
        by their leaders, for a partition that may be served here since. The caller holds the topic lock."""
        changed = False
        for index, (log_start_offset, _) in moved.items():
            state = topic.partition_states[index]
            if log_start_offset > state.log_start_offset:
                state.log_start_offset = log_start_offset
                if topic.partitions[index] is not None:
                    topic.partitions[index].move_log_start(log_start_offset)
                changed = True
                await self._journal({"type": ENTRY, "topic": topic.name, "number": index, "address": state.address,
                                     "log_start_offset": log_start_offset})
        if changed:
            await self.broker.share(topic)
