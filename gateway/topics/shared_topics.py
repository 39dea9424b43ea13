"""The topic registry in a cluster of gateways, and what it needs of the cluster
(gateway/cluster/leadership.py has it).

In a cluster only the controller writes the metadata journal; it shares
each topic's journaled state through CHP, from which the other gateways
take their topics, and partitions open only where they are led.
"""

from __future__ import annotations

from typing import Protocol

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.partition_log import recovered_state
from gateway.storage.mesh_storage import FenceOutcome, StoresUnavailable
from gateway.topics.topic import PartitionState, Topic
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()


class TakeoverFailed(Exception):
    """A partition named led here could not be taken over now: it is tried again later."""


class TopicSharing(Protocol):
    @property
    def is_controller(self) -> bool: ...

    async def share(self, state: dict) -> None: ...

    async def unshare(self, state: dict, deleted_at_ms: int) -> None: ...

    async def request_creation(self, name: str) -> None: ...

    async def leaders_assigned(self, topic_id: str, count: int, deadline: float) -> bool: ...

    async def report_log_start(self, topic_id: str, index: int, log_start_offset: int, first_sequence: int
                               ) -> None: ...

    async def claim_epoch(self, topic_id: str, index: int, epoch: int, newer: int) -> bool: ...

    async def serving(self, topic_id: str, index: int, epoch: int, start: int) -> None: ...

    def moved(self, topic_id: str, index: int, epoch: int) -> bool: ...

    def continued(self, topic_id: str, index: int) -> tuple[int, int] | None: ...


class ClusterTopics:
    """TopicRegistry's part in a cluster: following the controller's topics, leading the
    partitions assigned here, journaling log starts moved where others lead. Mixed into
    TopicRegistry, whose state and helpers it uses."""

    @property
    def follows_controller(self) -> bool:
        return self.sharing is not None and not self.sharing.is_controller

    async def share(self, topic: Topic) -> None:
        """Tell the other gateways of the cluster what the journal now holds of a topic."""
        if self.sharing is not None:
            await self.sharing.share(topic.state())

    async def led(self, topic: Topic, deadline: float) -> bool:
        """Whether each of the topic's partitions has a leader by `deadline` (trio's clock): alone at
        once; in a cluster, once the controller assigned them."""
        if self.sharing is None:
            return True
        return await self.sharing.leaders_assigned(str(topic.topic_id), len(topic.partition_states), deadline)

    def _check_controller(self) -> None:
        """Only the controller changes topics: the others send clients to it, as Kafka's brokers do."""
        if self.follows_controller:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "this gateway is not the controller")

    async def follow_shared(self, states: dict[str, dict]) -> None:
        """Take the topics the controller shared (CHP's `cluster/topics/`): new, changed, deleted."""
        if not self.follows_controller:
            return
        async with self.topic_lock:
            for topic in [t for t in self.topics.values() if states.get(t.name, {}).get("id") != str(t.topic_id)]:
                self._forget(topic)
            self.followed = {name: state for name, state in self.followed.items() if name in states}
            for name, state in states.items():
                if self.followed.get(name) is state and name in self.topics:
                    continue  # taken already: the mirror decodes a value once, and a change of any key calls here
                self.followed[name] = state
                shared = Topic.from_state(state)
                topic = self.topics.get(name)
                if topic is not None:
                    pairs = zip(topic.partition_states, shared.partition_states, strict=False)
                    for number, (mine, theirs) in enumerate(pairs):
                        if topic.partitions[number] is None:  # a led one knows its log start best
                            mine.log_start_offset, mine.first_sequence = theirs.log_start_offset, theirs.first_sequence
                    topic.configs = shared.configs
                    self._configured(topic)
                await self._open_added(topic, shared)

    async def follow_new_shared(self, states: dict[str, dict]) -> None:
        """Take at once, without the topic lock, the topics and partitions the controller added:
        `lead` holds the lock through its takeovers (fences, logs read back), and a client the
        controller told a topic exists heard here that it did not, hundreds of ms on, where Kafka's
        brokers learn it from the metadata log within ms. Only what no takeover reads: a new topic,
        or a known one's new partitions (unled here yet). Changed configs and log starts, deletions
        and a name taken by another topic wait for `follow_shared`. Nothing here yields (`_open`
        awaits nothing in a cluster), so `follow_shared` never sees it half done."""
        if not self.follows_controller:
            return
        for name, state in states.items():
            topic = self.topics.get(name)
            if topic is None:
                self.followed[name] = state  # taken whole: follow_shared has nothing of it left to take
            elif str(topic.topic_id) != state["id"] or len(state["partitions"]) <= len(topic.partition_states):
                continue
            await self._open_added(topic, Topic.from_state(state))

    async def _open_added(self, topic: Topic | None, shared: Topic) -> None:
        """Open what the controller's state of a topic (`shared`) adds to this gateway's (`topic`,
        None while unknown here): the whole topic, or the partitions beyond those known here
        (none of them led here yet)."""
        if topic is None:
            await self._open(shared)
            return
        topic.partition_states += shared.partition_states[len(topic.partition_states):]
        await self._open(topic)

    async def lead(self, wanted: dict[tuple[str, int], int]) -> float | None:
        """Lead exactly the partitions `wanted` names ((topic id, index) -> leader epoch): open
        those newly led from the stores, as start-up without a checkpoint does, close those lost.
        The seconds until a takeover that failed is due again, if one did."""
        async with self.topic_lock:
            self._close_lost(wanted)
            self._close_retired()
            await self.native.lead(wanted)
            # Held throughout: the takeovers read partition states that follow_shared changes and
            # fill slots a deletion empties. Each unled partition is taken over once, after its close.
            limiter = trio.CapacityLimiter(self.settings.concurrent_takeovers)
            async with trio.open_nursery() as nursery:
                for topic in [t for t in self.topics.values() if not t.native]:
                    topic_id = str(topic.topic_id)
                    for index, partition in enumerate(topic.partitions):
                        epoch = wanted.get((topic_id, index))
                        if epoch is not None and partition is None:
                            nursery.start_soon(self._take_over, topic, index, epoch, limiter)
            self._share_tail()
            return self.takeover_retries.next_wait_s(wanted)

    async def close_all(self) -> None:
        """Close every partition led or retired here: this gateway's role changes, and the next
        role's registry opens those it leads again."""
        await self.lead({})
        for key in list(self.retired):
            self._end_retirement(key, 0)

    def _close_lost(self, wanted: dict[tuple[str, int], int]) -> None:
        """Close the partitions led here that `wanted` no longer names at their epoch, or that were
        deposed; retire those another gateway leads now."""
        for topic in [t for t in self.topics.values() if not t.native]:
            topic_id = str(topic.topic_id)
            for index, partition in enumerate(topic.partitions):
                key = (topic_id, index)
                epoch = wanted.get(key)
                if partition is not None and (partition.leader_epoch != epoch or partition.mesh.deposed_by is not None):
                    if partition.mesh.deposed_by is None and self.sharing.moved(*key, partition.leader_epoch):
                        self._retire(topic, index)
                    else:
                        self._close(topic, index)
                    log.info("partition_leadership_lost", topic=topic.name, partition=index,
                             deposed_by=partition.mesh.deposed_by)

    def _retire(self, topic: Topic, index: int) -> None:
        """Hand a partition over to the gateway that leads it now. Batches published here may
        have reached the stores before its fence, and then are in its log: their produce waits
        until it serves (`_close_retired`), as an idempotent producer told NOT_LEADER_OR_FOLLOWER
        takes the batch for not written (librdkafka may send it again under a new epoch)."""
        partition, topic.partitions[index] = topic.partitions[index], None
        partition.retire()
        self.retired[(str(topic.topic_id), index)] = partition
        self._leadership_changed(topic.name, index, None)

    async def close_retired(self) -> None:
        async with self.topic_lock:
            self._close_retired()

    def _close_retired(self) -> None:
        """Close each retired partition whose next leader serves it, or whose topic is gone."""
        topic_ids = {str(topic.topic_id) for topic in self.topics.values()}
        for key, partition in list(self.retired.items()):
            continued = self.sharing.continued(*key)  # (epoch, start) of the leader serving it
            if key[0] not in topic_ids:
                self._end_retirement(key, 0)
            elif continued is not None and continued[0] > partition.leader_epoch:
                self._end_retirement(key, continued[1])

    def _end_retirement(self, key: tuple[str, int], continued_below: int) -> None:
        """Answer what waits on a retired partition: stored below the next leader's start."""
        partition = self.retired.pop(key, None)
        if partition is not None:
            partition.close(continued_below)
            self.storage.release(partition.mesh)

    async def _take_over(self, topic: Topic, index: int, epoch: int, limiter: trio.CapacityLimiter) -> None:
        """Lead a partition if its takeover is due; one that fails leaves it unled here (clients
        are told NOT_LEADER_OR_FOLLOWER) until it is tried again, the others go on."""
        key = (str(topic.topic_id), index)
        if not self.takeover_retries.due(key, epoch):
            return
        try:
            async with limiter:
                await self._lead(topic, index, epoch)
        except TakeoverFailed as failure:
            retry = self.takeover_retries.failed(key, epoch)
            log.warning("partition_takeover_failed", topic=topic.name, partition=index, epoch=epoch,
                        attempt=retry.attempts, reason=str(failure), retry_in_s=round(retry.wait_s, 3))
            return
        self.takeover_retries.succeeded(key)

    async def _lead(self, topic: Topic, index: int, epoch: int) -> None:
        """Open a partition led here at `epoch`: fenced at the stores first, so that no leader
        before gets a write acknowledged from here on; the log the stores continue read back."""
        state = topic.partition_states[index]
        fenced = await self._fence(topic, index, state, epoch)
        self._end_retirement((str(topic.topic_id), index), fenced.start)  # led here again
        try:
            offsets, producers, read = await recovered_state(
                self.storage.contents(topic.name, state.address, fenced.start - 1, state.first_sequence),
                state.first_sequence, state.log_start_offset, None)
        except StoresUnavailable as exc:
            raise TakeoverFailed(f"reading the log back: {exc}") from exc
        except ValueError as exc:  # a batch that does not decode or follow: every gateway would fail alike
            raise TakeoverFailed(f"the log read back does not index: {exc}") from exc
        partition = self._partition_log(topic, index, state, offsets, producers, epoch, fenced.epochs)
        topic.partitions[index] = partition
        log.info("partition_led", topic=topic.name, partition=index, epoch=epoch, next_offset=partition.next_offset,
                 start=fenced.start, next_sequence=offsets.next_sequence, first_sequence=state.first_sequence,
                 log_start_offset=partition.log_start_offset, batches_read=read)
        await self.sharing.serving(str(topic.topic_id), index, epoch, fenced.start)
        self._leadership_changed(topic.name, index, partition)

    async def _fence(self, topic: Topic, index: int, state: PartitionState, epoch: int) -> FenceOutcome:
        """Claim the partition at `epoch`: the outcome if enough of the stores accept, else
        TakeoverFailed. When they hold an equal or newer epoch, this gateway claims the key one
        above it (a restarted leader, or epochs counted again), and leads when CHP names it again."""
        min_insync = int(topic.config("min.insync.replicas", self.settings))
        outcome = await self.storage.fence(topic.name, state.address, epoch,
                                           lambda answers: answers.won(self._fenced_stores(), min_insync))
        stores = self._fenced_stores()
        if outcome.won(stores, min_insync):
            return outcome
        if len(outcome.accepted) < len(outcome.answers):  # refused: a claim of this epoch or newer
            claimed = await self.sharing.claim_epoch(str(topic.topic_id), index, epoch, outcome.newest_epoch + 1)
            raise TakeoverFailed(f"the stores hold a claim of epoch {outcome.newest_epoch}; "
                                 f"epoch {outcome.newest_epoch + 1} claimed: {claimed}")
        raise TakeoverFailed(f"{len(outcome.accepted)} of {stores} stores accepted the claim "
                             f"(min.insync.replicas={min_insync})")

    def _fenced_stores(self) -> int:
        """The stores a claim is won among. Every store that may hold an acknowledged write counts,
        the live ones too: with fewer, the answers of stores that missed a write could decide
        where the log goes on."""
        return max(self.settings.expected_stores, self.settings.embedded_stores, self.storage.live_stores())

    async def log_starts_reported(self, reports: dict[tuple[str, int], tuple[int, int]]) -> None:
        """The controller: journal the log starts that other gateways moved in partitions they lead."""
        async with self.topic_lock:
            for topic in list(self.topics.values()):
                moved = {index: report for index, state in enumerate(topic.partition_states)
                         if (report := reports.get((str(topic.topic_id), index))) is not None
                         and report[0] > state.log_start_offset}
                if moved:
                    await self.journal_log_starts(topic, moved)
                    log.info("reported_log_starts_journaled", topic=topic.name,
                             log_start_offsets={index: offset for index, (offset, _) in moved.items()})


def led(topic: Topic) -> list:
    """The topic's partitions this gateway leads (every one when it is the cluster alone)."""
    return [partition for partition in topic.partitions if partition is not None]
