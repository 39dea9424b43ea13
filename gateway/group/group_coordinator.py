"""The group coordinator: every group of the cluster, its members and its committed offsets.

Groups are classic (JoinGroup/SyncGroup) or KIP-848 consumer groups
(ConsumerGroupHeartbeat); one group id names one group of either type.

A lone gateway coordinates every group with one GroupCoordinator on its
groups journal; in a cluster each led __consumer_offsets partition has one
(sharded_groups.py). State and offsets are replayed from the journal before
the first request is served.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog
import trio

from gateway.group.classic import ClassicGroup, ClassicState
from gateway.group.classic_in_consumer import ClassicInConsumerGroup
from gateway.group.classic_membership import ClassicMembership, JoinRequest
from gateway.group.committed_offsets import Committed, OffsetStore, pending_entry
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.consumer_membership import ConsumerMembership, HeartbeatResult
from gateway.group.consumer_requests import HeartbeatRequest
from gateway.group.group_configs import ConfigValue, broker_values
from gateway.group.group_journal import GroupLog
from gateway.group.offsets_markers import OffsetsPartitionMarkers, PartitionOf
from gateway.group.reconcile import ConsumerMember
from gateway.group.timer import Reply, Timer
from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from protocol.kafka.coordinator_records import OFFSETS_TOPIC
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

# Members of consumer groups commit with their member epoch from this OffsetCommit version on.
FIRST_MEMBER_EPOCH_COMMIT_VERSION = 9


class GroupCoordinator:
    def __init__(self, settings: BrokerSettings, journal: Journal | None, topics: Mapping | None = None,
                 config_value: ConfigValue | None = None):
        self.settings = settings
        self.config_value = config_value or broker_values(settings)  # a group's session timeout and interval
        self.topics = topics if topics is not None else {}  # the broker's topics by name, read only
        self.offsets = OffsetStore()
        self.log = GroupLog(journal, self.offsets)
        self.timer = Timer()
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self.classic = ClassicMembership(self)
        self.consumer = ConsumerMembership(self)
        self.classic_in_consumer = ClassicInConsumerGroup(self)
        self._deleted_topics: dict[str, int] = {}  # name -> when it was deleted (ms), until removed
        self._topics_deleted = trio.Event()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Replay the journal, then run the timeouts."""
        async with trio.open_nursery() as nursery:
            for entry in await self.log.replay(nursery):
                self._replay(entry)
            for group in self.groups.values():
                membership = self.consumer if isinstance(group, ConsumerGroup) else self.classic
                membership.restored(group)
            log.info("groups_ready", groups=len(self.groups), with_offsets=len(self.offsets.groups()),
                     open_transactions=self.offsets.open_transactions())
            nursery.start_soon(self.timer.run)
            nursery.start_soon(self._expire_offsets)
            nursery.start_soon(self._remove_offsets_of_deleted_topics)
            task_status.started()

    def unloaded(self) -> None:
        """Another gateway coordinates these groups now: parked requests learn it (Kafka's onGroupUnloaded)."""
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                group.answer_parked(ErrorCode.NOT_COORDINATOR)

    def _replay(self, entry: dict) -> None:
        kind, group_id = entry["type"], entry["group"]
        if kind == "classic_group":
            self.groups[group_id] = ClassicGroup.restored(entry)
        elif kind == "consumer_group":
            self.groups[group_id] = ConsumerGroup.restored(entry)
        elif kind == "group_deleted":
            self.groups.pop(group_id, None)
            self.offsets.replay(entry)
        else:
            self.offsets.replay(entry)
            if group_id not in self.groups and self.offsets.of(group_id):
                self.groups[group_id] = ClassicGroup(group_id)  # a group that only stores offsets

    # Membership ------------------------------------------------------------------

    async def join(self, request: JoinRequest) -> Reply:
        return await self.classic.join(request)

    async def sync(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes]) -> Reply:
        return await self.classic.sync(group_id, member_id, instance_id, generation, protocol_type, protocol_name,
                                       assignments)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> ErrorCode:
        return self.classic.heartbeat(group_id, member_id, instance_id, generation)

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        return await self.classic.leave(group_id, members)

    async def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        return await self.consumer.heartbeat(request)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """A KIP-848 group, for ConsumerGroupDescribe; KafkaError as Kafka answers otherwise."""
        return self.consumer.consumer_group(group_id)

    def group(self, group_id: str) -> ClassicGroup | ConsumerGroup | None:
        return self.groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self.groups)

    def classic_group(self, group_id: str, create: bool = False) -> ClassicGroup:
        """The classic group, made if `create`; KafkaError as Kafka answers otherwise."""
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            if not create or not group.is_empty():
                # Classic members join a consumer group with members through ClassicInConsumerGroup.
                code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL if create else ErrorCode.UNKNOWN_MEMBER_ID
                raise KafkaError(code, f"group {group_id} is a consumer group")
            log.info("consumer_group_converted", group=group_id)
            group = None
            self.log.append(ClassicGroup(group_id).snapshot())  # the empty consumer group is gone
        if group is None:
            if not create:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id} does not exist")
            group = self.groups[group_id] = ClassicGroup(group_id)
        return group

    # Offsets ---------------------------------------------------------------------

    async def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                             version: int, commits: dict[tuple[str, int], Committed]) -> None:
        """Commit after Kafka's generation or member epoch checks; KafkaError if refused."""
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                code = ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
                raise KafkaError(code, f"group {group_id} does not exist")
            group = self.groups[group_id] = ClassicGroup(group_id)
        if isinstance(group, ConsumerGroup):
            validate_consumer_commit(group, member_id, generation, version, transactional=False)
        else:
            validate_classic_commit(group, member_id, instance_id, generation)
        if commits:
            await self.log.write(self.offsets.commit(group_id, commits))

    def validate_transactional_commit(self, group_id: str, member_id: str, instance_id: str | None,
                                      generation: int) -> None:
        """TxnOffsetCommit's member checks; the offsets wait for the transaction's commit."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            validate_consumer_commit(group, member_id, generation, None, transactional=True)
            return
        if group is None and generation >= 0:  # Kafka's answer: the generation names no group
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"group {group_id} does not exist")
        if group is None or (generation < 0 and not member_id):
            return  # producers without group metadata (TxnOffsetCommit v0-2) are not checked
        validate_classic_commit(group, member_id, instance_id, generation)

    async def commit_transactional_offsets(self, group_id: str, producer: tuple[int, int],
                                           commits: dict[tuple[str, int], Committed]) -> None:
        """Hold offsets of the producer's (id, epoch) transaction, checked by
        validate_transactional_commit, until its marker (`end_transaction`)."""
        self.groups.setdefault(group_id, ClassicGroup(group_id))
        await self.log.write(pending_entry(group_id, producer, commits))  # the partition may fence the epoch
        self.offsets.apply_pending(group_id, producer, commits)

    async def end_transaction(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction ended: its marker reached this coordinator's partition (a lone
        gateway journals the outcome; in a cluster the marker in the partition is the record)."""
        for entry in self.offsets.end_transaction(producer_id, commit):
            await self.log.write(entry)

    def marked(self, partition_of: PartitionOf) -> PartitionOf:
        """`partition_of` where a marker for __consumer_offsets ends the transaction's offsets here
        (a lone gateway's __consumer_offsets is a copy of its groups journal: it takes no marker)."""
        def marked_partition(topic: str, index: int):
            if topic == OFFSETS_TOPIC:
                return OffsetsPartitionMarkers(index, None, lambda: self)
            return partition_of(topic, index)

        return marked_partition

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of the partition (OffsetFetch's
        require_stable answers UNSTABLE_OFFSET_COMMIT then)."""
        return self.offsets.has_pending(group_id, topic, partition)

    def fetch_offsets(self, group_id: str) -> dict:
        """A group's committed offsets by (topic, partition)."""
        return self.offsets.of(group_id)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+ from a consumer group member: its id and epoch must be current."""
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or (member_id is None and member_epoch < 0):
            return
        _check_member_epoch(member_epoch, group.member(member_id))

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> dict:
        """{(topic, partition): error} for OffsetDelete; KafkaError for the whole group."""
        group = self.groups.get(group_id)
        if group is None or not group_id:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        if group.protocol_type not in (None, "consumer") and group.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {group_id} is not empty")
        subscribed = group.subscribed_topics() or set()
        errors = {p: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if p[0] in subscribed else ErrorCode.NONE
                  for p in partitions}
        deleted = [p for p, error in errors.items() if error == ErrorCode.NONE and self.offsets.get(group_id, *p)]
        if deleted:
            await self.log.write(self.offsets.delete(group_id, deleted))
        return errors

    def topic_deleted(self, name: str, deleted_at_ms: int) -> None:
        """Kafka removes every group's offsets of a deleted topic's partitions (its coordinator's
        onPartitionsDeleted): those committed until its deletion go soon after."""
        self._deleted_topics[name] = max(deleted_at_ms, self._deleted_topics.get(name, deleted_at_ms))
        self._topics_deleted.set()

    async def _remove_offsets_of_deleted_topics(self) -> None:
        while True:
            await self._topics_deleted.wait()
            self._topics_deleted = trio.Event()
            deleted, self._deleted_topics = self._deleted_topics, {}
            await self.remove_offsets_of(deleted)

    async def remove_offsets_of(self, deleted: dict[str, int]) -> None:
        """Remove the offsets of topics `deleted` (name -> when) committed until then: a commit
        after it is of a topic created again under the name. An empty group left without offsets
        goes at the next expiration check, as after offsets expire."""
        removed = 0
        for group_id in self.offsets.groups_holding():
            gone = list(dict.fromkeys(key for key, committed in self.offsets.held(group_id)
                                      if committed.commit_ms <= deleted.get(key[0], -1)))
            if gone:
                await self.log.write(self.offsets.delete(group_id, gone))
                removed += len(gone)
        if removed:
            log.info("deleted_topics_offsets_removed", topics=sorted(deleted), offsets=removed)

    async def _expire_offsets(self) -> None:
        while True:
            await trio.sleep(self.settings.offsets_retention_check_interval_ms / 1000)
            await self.expire_offsets()

    async def expire_offsets(self) -> None:
        retention_ms = self.settings.offsets_retention_minutes * 60 * 1000
        for group_id in self.offsets.groups():
            group = self.groups.get(group_id)
            if isinstance(group, ConsumerGroup):
                # Kafka's rule for consumer groups: unsubscribed topics' offsets expire after their commit.
                subscribed = group.subscribed_topics()
                expired = [key for key in self.offsets.expired(group_id, None, retention_ms)
                           if key[0] not in subscribed]
            elif group is not None and not group.is_empty():
                continue
            else:
                empty_since = group.state_timestamp_ms if group is not None and group.protocol_type else None
                expired = self.offsets.expired(group_id, empty_since, retention_ms)
            if expired:
                log.info("offsets_expired", group=group_id, partitions=len(expired))
                await self.log.write(self.offsets.delete(group_id, expired))
            if group is not None and group.is_empty() and not self.offsets.has_offsets(group_id):
                await self._delete_group(group_id)

    # Groups ------------------------------------------------------------------------

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]:
        errors = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if not group_id:
                errors.append(ErrorCode.INVALID_GROUP_ID)
            elif group is None:
                errors.append(ErrorCode.GROUP_ID_NOT_FOUND)
            elif not group.is_empty():
                errors.append(ErrorCode.NON_EMPTY_GROUP)
            else:
                await self._delete_group(group_id)
                errors.append(ErrorCode.NONE)
        return errors

    async def _delete_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id)
        group.mark_dead()
        partitions = [list(key) for key in self.offsets.of(group_id)]  # for the offsets topic's tombstones
        self.offsets.apply_delete(group_id, None)
        await self.log.write({"type": "group_deleted", "group": group_id, "partitions": partitions})
        log.info("group_deleted", group=group_id)


def validate_consumer_commit(group: ConsumerGroup, member_id: str, epoch: int, version: int | None,
                             transactional: bool) -> None:
    """Kafka's checks of a commit to a consumer group: the member's current epoch."""
    if epoch < 0 and group.is_empty():
        return  # an admin client or a consumer that assigns partitions itself
    if transactional and epoch < 0 and not member_id:
        return  # TxnOffsetCommit without group metadata
    member = group.member(member_id)
    modern = member.classic is None
    if not transactional and modern and version is not None and version < FIRST_MEMBER_EPOCH_COMMIT_VERSION:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         "OffsetCommit version 9 or above must be used by members using the modern group protocol")
    _check_member_epoch(epoch, member)


def _check_member_epoch(received: int, member: ConsumerMember) -> None:
    """Kafka's validateMemberEpoch: a classic member's epoch is its generation."""
    if received == member.epoch:
        return
    if member.classic is not None:
        raise KafkaError(ErrorCode.ILLEGAL_GENERATION,
                         f"The received generation id {received} does not match the expected member epoch "
                         f"{member.epoch}.")
    raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH,
                     f"The received member epoch {received} does not match the expected member epoch {member.epoch}.")


def validate_classic_commit(group: ClassicGroup, member_id: str, instance_id: str | None, generation: int) -> None:
    """Kafka's checks of a commit to a classic group."""
    if group.is_(ClassicState.DEAD):
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "group is being deleted")
    if generation < 0 and group.is_(ClassicState.EMPTY):
        return  # an admin client or a consumer that assigns partitions itself
    if generation >= 0 or member_id or instance_id is not None:
        group.validate_member(member_id, instance_id)
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not {group.generation}")
    else:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, "a group with members takes commits of members only")
    if group.is_(ClassicState.COMPLETING_REBALANCE):
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, "the group is completing a rebalance")
