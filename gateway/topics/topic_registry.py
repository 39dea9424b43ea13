"""The topics and partitions this gateway leads, kept on the mesh.

The metadata journal holds every topic (name, id, partition addresses,
configs, log start offsets), the blocks of producer ids handed out and the
native partitions found; start-up replays it and opens every partition at
the heads the stores report.
"""

from __future__ import annotations

import functools
import uuid
from typing import Callable, TypeVar

import structlog
import trio

from gateway.data_directory import CHECKPOINTS_DIRECTORY
from gateway.kafka_error import KafkaError
from gateway.partitions.offset_index import OffsetIndex
from gateway.partitions.partition_log import PartitionLog, recovered_state
from gateway.partitions.producer_state import ProducerStates
from gateway.partitions.read_ahead import ReadAheadMemory
from gateway.settings.table import BrokerSettings
from gateway.storage.discard_directives import DiscardDirectives
from gateway.storage.journal import Journal
from gateway.storage.mesh_storage import MeshStorage
from gateway.topics.internal_topic_specs import INTERNAL_PARTITIONS, internal_configs, internal_topic_id
from gateway.topics.native_topics import ENTRY as NATIVE_ENTRY
from gateway.topics.native_topics import NativeTopics
from gateway.topics.partition_checkpoints import PartitionCheckpoints, Recovery
from gateway.topics.producer_ids import ProducerIds
from gateway.topics.shared_topics import ClusterTopics, TopicSharing, led
from gateway.topics.takeover_retries import TakeoverRetries
from gateway.topics.topic import PartitionState, Topic, check_topic_name
from gateway.topics.topic_compaction import keep_cleaning_points_moving, partition_discards, policies
from gateway.topics.topic_configs import TOPIC_CONFIGS, InvalidConfig, checked_overrides
from gateway.wall_clock import now_ms
from protocol.dafka import new_uuid
from protocol.journal.discard_directive import Discard
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

OWN_ADDRESSES = "own_addresses"  # partition addresses gateway topics ever had, deleted ones included
DELETED_PARTITIONS = "deleted_partitions"  # the directives that emptied deleted topics' partitions
STORES_CHECK_S = 0.25  # how soon stores that came, went or fell behind move the watermarks
T = TypeVar("T")


class TopicRegistry(ClusterTopics):
    def __init__(self, settings: BrokerSettings, storage: MeshStorage, journal: Journal,
                 discards: DiscardDirectives, sharing: TopicSharing | None = None, *, cleaner_backoff_ms: int = 15000):
        self.settings = settings
        self.sharing = sharing  # None: this gateway alone is the cluster and leads every partition
        self.cleaner_backoff_ms = cleaner_backoff_ms
        self.storage = storage
        self.discards = discards
        self.journal = journal  # the metadata journal
        self.topics: dict[str, Topic] = {}
        # Partitions whose leadership moved, with produce still waiting for stores (shared_topics.py).
        self.retired: dict[tuple[str, int], PartitionLog] = {}
        self.followed: dict[str, dict] = {}  # name -> the controller's shared state last taken (follow_shared)
        self.producer_ids = ProducerIds(self.journal)
        self._nursery: trio.Nursery | None = None
        self.topic_lock = trio.Lock()
        self.own_addresses: set[str] = set()  # every partition address a gateway topic ever had
        self.deleted_partitions: dict[str, Discard] = {}  # by address: re-sent at start-up
        self._tail_share = settings.tail_bytes_per_partition  # in-memory tail bytes of each partition
        self._read_ahead = ReadAheadMemory(settings.read_ahead_bytes_total)  # shared by all partitions
        self.native = NativeTopics(self)
        self._derived: dict[str, dict] = {}  # topic name -> {compute: (topic, its overrides, value)}
        self.checkpoints = PartitionCheckpoints(settings.log_dirs / CHECKPOINTS_DIRECTORY, storage.read)
        self.recovery = Recovery()
        self.takeover_retries = TakeoverRetries()  # partitions led here whose takeover failed
        # told of every partition led here opened (the PartitionLog) or closed (None), in a cluster
        self.leadership_watchers: list[Callable[[str, int, PartitionLog | None], None]] = []
        # told each deleted topic's name and when it was deleted (ms): here, or by the controller
        self.deletion_watchers: list[Callable[[str, int], None]] = []
        self._deletion_notices: set[str] = set()  # the controller's notices taken (topic ids)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Recover every topic from the mesh, then keep the partitions' tasks running
        (the discard directives are open and the journal's heads prefetched)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.follows_controller:
                nursery.start_soon(self._follow_stores)
                nursery.start_soon(self.enforce_retention)
                nursery.start_soon(self.native.run)  # the heads of the native partitions led here
                log.info("topics_follow_controller")
                task_status.started()
                await trio.sleep_forever()
            states = self._replayed(await self.journal.replay())
            # Partitions led elsewhere take their heads when they are led here.
            await self.storage.prefetch_heads(*(() if self.sharing else states), *self.native.journaled_topics())
            for state in states.values():
                topic = Topic.from_state(state)
                await self._open(topic, None if self.sharing else await self.storage.heads(topic.name))
                await self.share(topic)
            # A directive sent just before a crash may have reached no store.
            await self.resend_discards()
            await self._resend_deletions()
            await self.native.open()
            # Only now does memory hold everything the journal does: compaction may snapshot it.
            self.journal.compact_with(nursery, self._metadata_snapshot)
            nursery.start_soon(self.native.run)
            nursery.start_soon(self.enforce_retention)
            nursery.start_soon(keep_cleaning_points_moving, self.topics, lambda: self.settings, self.discards.send,
                               self.cleaner_backoff_ms)
            nursery.start_soon(self._checkpoint_periodically)
            nursery.start_soon(self._follow_stores)
            log.info("topics_ready", topics=len(self.topics), **self.recovery.summary())
            task_status.started()
            await trio.sleep_forever()

    def _replayed(self, entries: list[dict]) -> dict[str, dict]:
        """Apply the metadata journal; the state entry of every live topic by name."""
        states: dict[str, dict] = {}
        for entry in entries:
            if entry["type"] == "topic":
                states[entry["name"]] = entry
                self.own_addresses.update(address for address, *_ in entry["partitions"])
            elif entry["type"] == "topic_deleted":
                states.pop(entry["name"], None)
                self._deleted(entry["name"], entry.get("ends", {}))  # no ends before they were journaled
            elif entry["type"] == OWN_ADDRESSES:
                self.own_addresses.update(entry["addresses"])
            elif entry["type"] == DELETED_PARTITIONS:
                self._keep_deleted([Discard(*fields, deleted=True) for fields in entry["discards"]])
            elif entry["type"] == "producer_ids":
                self.producer_ids.replay(entry)
            elif entry["type"] == NATIVE_ENTRY:
                self.native.replay(entry)
        return states

    def _metadata_snapshot(self) -> list[dict]:
        """What a replay of the metadata journal so far ends with, as entries. The
        addresses of deleted topics stay: their records are still on the stores,
        and must not come back as native partitions."""
        return [*(topic.state() for topic in self.topics.values() if not topic.native),
                {"type": OWN_ADDRESSES, "addresses": sorted(self.own_addresses)},
                {"type": DELETED_PARTITIONS, "discards": [list(d[:3]) for d in self.deleted_partitions.values()]},
                *self.producer_ids.entries(), *self.native.entries()]

    async def _open(self, topic: Topic, heads: dict[str, int] | None = None) -> None:
        """Start serving the topic's new partitions; `heads` (from the stores) when
        they may hold data already, as at start-up. In a cluster they open when led here."""
        if not topic.native:  # a native producer's address is not the gateway's
            self.own_addresses.update(state.address for state in topic.partition_states)
        if self.sharing is not None:
            topic.partitions += [None] * (len(topic.partition_states) - len(topic.partitions))
            self.topics[topic.name] = topic
            return
        for number, state in enumerate(topic.partition_states[len(topic.partitions):],
                                       start=len(topic.partitions)):
            head = (heads or {}).get(state.address)
            restored = None if heads is None else await self.checkpoints.restore(
                topic.name, str(topic.topic_id), state.address, state.first_sequence, head)
            # The stores may have discarded what lies below first_sequence.
            first = restored[0].next_sequence if restored else state.first_sequence
            offsets, producers, read = await recovered_state(
                self.storage.contents(topic.name, state.address, head, first),
                state.first_sequence, state.log_start_offset, restored)
            if heads is not None:
                self.recovery.note(restored is not None, read)
            topic.partitions.append(self._partition_log(topic, number, state, offsets, producers))
        self.topics[topic.name] = topic
        self._share_tail()

    def _share_tail(self) -> None:
        """Split the memory for recent batches between the gateway's partitions, so
        that many partitions cannot take more than --tail-bytes-total."""
        gateway_topics = [t for t in self.topics.values() if not t.native]
        count = sum(len(led(t)) for t in gateway_topics)
        share = min(self.settings.tail_bytes_per_partition, self.settings.tail_bytes_total // max(count, 1))
        if share == self._tail_share:
            return  # new partitions were made with this share already
        self._tail_share = share
        log.info("tail_shared", partitions=count, bytes_per_partition=share)
        for topic in gateway_topics:
            for partition in led(topic):
                partition.limit_tail(share)

    def _partition_log(self, topic: Topic, number: int, state: PartitionState, offsets: OffsetIndex,
                       producers: ProducerStates, epoch: int | None = None, epochs: tuple = ()) -> PartitionLog:
        """Serve a partition; fenced at leader `epoch`, continuing the stores' `epochs`, when given."""
        mesh = self.storage.host(topic.name, state.address, offsets.next_sequence, epoch, epochs)
        partition = PartitionLog(
            topic.name, number, mesh, self.storage.read, offsets, producers,
            min_insync=int(topic.config("min.insync.replicas", self.settings)),
            tail_bytes=self._tail_share,
            live_stores=functools.partial(self.storage.live_stores_for, mesh),
            lag_s=self.settings.replica_lag_time_max_ms / 1000,
            read_ahead=self._read_ahead,
            log_start_offset=offsets.first_offset,
            leader_epoch=0 if epoch is None else epoch,
            sequence_epochs=epochs,
        )
        partition.move_log_start(state.log_start_offset)  # a journal without first_sequence read from 0
        state.first_sequence = partition.first_sequence
        self._nursery.start_soon(partition.run)
        return partition

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def names(self) -> list[str]:
        return sorted(self.topics)

    def config(self, topic: Topic, name: str) -> str:
        """The topic's value of a topic config: its override, else what it inherits."""
        return topic.config(name, self.settings)

    def derived(self, topic: Topic, compute: Callable[[Callable[[str], str]], T]) -> T:
        """`compute` of the topic's config values, computed again only when they change: a
        change replaces the topic's overrides, or the broker settings (`reconfigure`)."""
        kept = self._derived.setdefault(topic.name, {}).get(compute)
        if kept is not None and kept[:3] == (topic, topic.configs, self.settings):
            return kept[3]
        value = compute(functools.partial(self.config, topic))
        self._derived[topic.name][compute] = (topic, topic.configs, self.settings, value)
        return value

    def reconfigure(self, settings: BrokerSettings) -> None:
        """Run with new broker settings (dynamic broker configs changed): every topic without an
        override takes the new defaults, the partitions led here their min.insync.replicas at once."""
        self.settings = settings
        for topic in self.topics.values():
            self._configured(topic)

    def inherited(self, name: str) -> str:
        """What a topic config is without an override."""
        return TOPIC_CONFIGS[name].inherited(self.settings)

    def partition(self, name: str, number: int) -> PartitionLog | None:
        """The partition, if this gateway leads it."""
        topic = self.topics.get(name)
        if topic is None or not 0 <= number < len(topic.partitions):
            return None
        return topic.partitions[number]

    async def create(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                           configs: dict[str, str | None] | None = None, *,
                           validate_only: bool = False, topic_id: uuid.UUID | None = None) -> Topic:
        check_topic_name(name)
        if num_partitions == -1:
            num_partitions = self.settings.num_partitions
        if replication_factor == -1:
            replication_factor = self.settings.default_replication_factor
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be at least 1")
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "replication factor must be at least 1")
        try:
            overrides = checked_overrides(configs or {})
        except InvalidConfig as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        async with self.topic_lock:
            self._check_controller()
            if name in self.topics:
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            topic = Topic(name, topic_id or uuid.uuid4(), replication_factor,
                          [PartitionState(new_uuid()) for _ in range(num_partitions)], overrides)
            if validate_only:
                return topic
            await self.journal.write(topic.state())
            await self._open(topic)
            await self.share(topic)
        log.info("topic_created", topic=name, partitions=num_partitions, configs=overrides)
        return topic

    async def internal(self, name: str) -> Topic:
        """Kafka's internal topic `name`, created as Kafka creates it if missing (its partition count,
        compacted, its id derived from its name); a gateway that is not the controller asks it to."""
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        if self.follows_controller:
            await self.sharing.request_creation(name)
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{name} is being created")
        try:
            return await self.create(name, INTERNAL_PARTITIONS[name], configs=internal_configs(name, self.settings),
                                     topic_id=internal_topic_id(name))
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:  # created meanwhile
                raise
            return self.topics[name]

    async def auto_create(self, name: str) -> Topic | None:
        """The topic, created with defaults if allowed and missing (an internal one as Kafka has it)."""
        topic = self.topics.get(name)
        if topic is None and name in INTERNAL_PARTITIONS:
            return await self.internal(name)
        if topic is None and self.settings.auto_create_topics_enable and self.follows_controller:
            check_topic_name(name)  # refused here, as the controller would
            await self.sharing.request_creation(name)
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"topic {name!r} is being created")
        if topic is None and self.settings.auto_create_topics_enable:
            try:
                topic = await self.create(name)
            except KafkaError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise
                topic = self.topics[name]
        return topic

    async def delete(self, name: str) -> None:
        """Forget the topic, then empty its partitions on the stores. A batch produced while the
        deletion is journaled may lie past the journaled end and stay."""
        async with self.topic_lock:
            topic = self._changeable(name, ErrorCode.TOPIC_DELETION_DISABLED, "delete")
            ends = await self._ends(topic)
            await self.journal.write({"type": "topic_deleted", "name": name, "ends": ends})
            deleted_at_ms = now_ms()
            if self.sharing is not None:
                await self.sharing.unshare(topic.state(), deleted_at_ms)
            self._forget(topic)
            await self.discards.send(self._deleted(name, ends))
        self.tell_deleted(name, deleted_at_ms)
        log.info("topic_deleted", topic=name)

    def deleted_elsewhere(self, notices: dict[str, tuple[str, int]]) -> None:
        """The controller's notices of deleted topics (topic id -> (name, when)): each is told once."""
        if self.follows_controller:
            for topic_id in notices.keys() - self._deletion_notices:
                self.tell_deleted(*notices[topic_id])
        self._deletion_notices = set(notices)

    def tell_deleted(self, name: str, deleted_at_ms: int) -> None:
        for watcher in self.deletion_watchers:
            watcher(name, deleted_at_ms)

    async def _ends(self, topic: Topic) -> dict[str, int]:
        """Each partition's next sequence: as published here, else as the stores hold it (led elsewhere)."""
        heads = {} if None not in topic.partitions else await self.storage.heads(topic.name)
        return {state.address: heads.get(state.address, -1) + 1 if partition is None else partition.mesh.next_sequence
                for state, partition in zip(topic.partition_states, topic.partitions, strict=True)}

    def _forget(self, topic: Topic) -> None:
        del self.topics[topic.name]
        self._derived.pop(topic.name, None)
        for index, partition in enumerate(topic.partitions):
            if partition is not None:
                self._close(topic, index)
                if not topic.native:
                    self.checkpoints.forget(str(topic.topic_id), partition.mesh.uuid)
        self._share_tail()

    def _close(self, topic: Topic, index: int) -> None:
        if topic.native:
            self.native.close(topic, index)
            return
        partition, topic.partitions[index] = topic.partitions[index], None
        partition.close()
        self.storage.release(partition.mesh)
        self._leadership_changed(topic.name, index, None)

    def _leadership_changed(self, topic: str, index: int, partition: PartitionLog | None) -> None:
        for watcher in self.leadership_watchers:
            watcher(topic, index, partition)

    def _deleted(self, name: str, ends: dict[str, int]) -> list[Discard]:
        """The directives deleting a deleted topic's partitions, kept to be sent again at start-up."""
        return self._keep_deleted([Discard(name, address, end, deleted=True) for address, end in ends.items()])

    def _keep_deleted(self, discards: list[Discard]) -> list[Discard]:
        self.deleted_partitions.update((discard.address, discard) for discard in discards)
        return discards

    async def add_partitions(self, name: str, count: int, *, validate_only: bool = False) -> None:
        async with self.topic_lock:
            topic = self._changeable(name, ErrorCode.POLICY_VIOLATION, "add partitions to")
            if count <= len(topic.partition_states):
                raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                                 f"topic {name!r} has {len(topic.partition_states)} partitions; "
                                 f"{count} would not add any")
            if validate_only:
                return
            topic.partition_states += [PartitionState(new_uuid())
                                       for _ in range(count - len(topic.partition_states))]
            await self.journal.write(topic.state())
            await self._open(topic)
            await self.share(topic)

    async def replace_configs(self, name: str, overrides: dict[str, str], *, validate_only: bool = False) -> None:
        """Replace a topic's overrides."""
        await self.change_configs(name, lambda current: overrides, validate_only=validate_only)

    async def change_configs(self, name: str, change: Callable[[dict[str, str]], dict[str, str | None]], *,
                             validate_only: bool = False) -> None:
        """Replace a topic's overrides by `change(current overrides)`, atomically."""
        async with self.topic_lock:
            topic = self._changeable(name, ErrorCode.POLICY_VIOLATION, "configure")
            try:
                checked = checked_overrides(change(dict(topic.configs)))
            except InvalidConfig as exc:
                raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            if validate_only:
                return
            topic.configs = checked
            await self.journal.write(topic.state())
            await self.share(topic)
            self._configured(topic)

    def _configured(self, topic: Topic) -> None:
        if topic.native:  # nothing is produced to it
            return
        insync = int(topic.config("min.insync.replicas", self.settings))
        for partition in led(topic):
            partition.min_insync = insync

    def _changeable(self, name: str, refusal: ErrorCode, change: str) -> Topic:
        """The topic `name`, if the gateway may `change` it: native topics belong to
        their producers, so Kafka's answer for a change its policy forbids."""
        self._check_controller()
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        if topic.native:
            raise KafkaError(refusal, f"topic {name!r} is published by native Dafka producers: "
                                      f"the gateway cannot {change} it")
        return topic

    async def _follow_stores(self) -> None:
        """Stores come, go or fall behind without an ACK to say so: every partition's
        watermark may move when the live ones change, a lagging one's at any time."""
        live = self.storage.live_stores()
        while True:
            await trio.sleep(STORES_CHECK_S)
            now_live = self.storage.live_stores()
            changed, joined, live = now_live != live, now_live > live, now_live
            if changed:
                log.info("live_stores_changed", live=live)
            if joined:  # maybe one that was down when topics were deleted
                await self._resend_deletions()
            for topic in list(self.topics.values()):
                for partition in () if topic.native else led(topic):
                    if changed or partition.high_watermark < partition.next_offset:
                        partition.stores_changed()

    async def _checkpoint_periodically(self) -> None:
        while True:
            await trio.sleep(self.settings.log_flush_offset_checkpoint_interval_ms / 1000)
            await self.checkpoint_all()

    async def checkpoint_all(self) -> None:
        """Checkpoint every partition that took batches since its last checkpoint."""
        written = await self.checkpoints.write([(str(topic.topic_id), partition)
                                                for topic in list(self.topics.values()) if not topic.native
                                                for partition in led(topic)])
        if written:
            log.info("partitions_checkpointed", partitions=written)

    async def enforce_retention(self) -> None:
        """Apply each topic's retention.ms / retention.bytes, as Kafka's
        log.retention.check.interval.ms loop does."""
        while True:
            await trio.sleep(self.settings.log_retention_check_interval_ms / 1000)
            now = now_ms()
            for topic in list(self.topics.values()):
                if topic.native or "delete" not in policies(topic, self.settings):
                    continue
                retention_ms = int(topic.config("retention.ms", self.settings))
                retention_bytes = int(topic.config("retention.bytes", self.settings))
                moved = [p.apply_retention(now, retention_ms, retention_bytes) for p in led(topic)]
                if any(moved) and topic.name in self.topics:
                    log.info("retention_applied", topic=topic.name,
                             log_start_offsets=[p.log_start_offset for p in led(topic)])
                    await self.save_log_start(topic)
            await self.resend_discards()

    async def resend_discards(self) -> None:
        """Every partition's directive again, for the stores that missed it (down, new or
        behind): a store behind a directive skips to it instead of waiting for records
        that nobody holds any more. The directives for deleted topics (`_resend_deletions`)
        and older journal generations are not sent here: their number only grows, and
        nothing waits on them to go on. In a cluster the controller sends them."""
        if self.follows_controller:
            return
        async with self.topic_lock:  # what is journaled: save_log_start updates it under the lock
            discards = [discard for topic in self.topics.values() if not topic.native
                        for discard in partition_discards(topic, self.settings)]
        await self.discards.send(discards)

    async def _resend_deletions(self) -> None:
        """The directives deleting deleted topics' partitions, for stores that missed them. Sent
        at start-up and when stores join, not at every retention check: their number only grows."""
        if not self.follows_controller:
            await self.discards.send(list(self.deleted_partitions.values()))

    async def save_log_start(self, topic: Topic) -> None:
        """Persist the log start offsets after retention or DeleteRecords moved them,
        then tell the stores what they may discard below."""
        async with self.topic_lock:
            if self.topics.get(topic.name) is not topic:
                return  # deleted meanwhile: a write now would bring it back
            moved = {index: (partition.log_start_offset, partition.first_sequence)
                     for index, partition in enumerate(topic.partitions) if partition is not None}
            if not self.follows_controller:
                await self.journal_log_starts(topic, moved)
                return
            for index, (log_start_offset, first_sequence) in moved.items():
                await self.sharing.report_log_start(str(topic.topic_id), index, log_start_offset, first_sequence)

    async def journal_log_starts(self, topic: Topic, moved: dict[int, tuple[int, int]]) -> None:
        """Journal a topic's moved log starts (they never go back), then tell the stores what
        they may discard below (caller holds the topic lock)."""
        if topic.native:
            await self.native.journal_log_starts(topic, moved)
            return
        grown = set()
        for index, (log_start_offset, first_sequence) in moved.items():
            state = topic.partition_states[index]
            if first_sequence > state.first_sequence:
                grown.add(state.address)
            state.log_start_offset = max(state.log_start_offset, log_start_offset)
            state.first_sequence = max(state.first_sequence, first_sequence)
        await self.journal.write(topic.state())
        await self.share(topic)
        await self.discards.send([d for d in partition_discards(topic, self.settings) if d.address in grown])


