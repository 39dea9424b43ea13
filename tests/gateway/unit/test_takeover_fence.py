"""A gateway taking a partition over: it continues the log after the longest log of a quorum
of the stores that may hold an acknowledged write, never after the first answers alone; and a
takeover that fails (too few stores accept the claim, none returns the log in time) leaves that
partition unled, is tried again after a backoff, and never ends the gateway nor stops the others."""

import uuid
from types import SimpleNamespace

import pytest
import trio

from gateway.kafka_error import KafkaError
from gateway.mesh.dafka_producer import ProducerPartition, UnackedBytes
from gateway.settings.table import BrokerSettings
from gateway.storage.mesh_storage import FenceOutcome, StoresUnavailable
from gateway.topics.shared_topics import TakeoverFailed
from gateway.topics.takeover_retries import BACKOFF_S
from gateway.topics.topic import PartitionState, Topic
from gateway.topics.topic_registry import TopicRegistry
from protocol.dafka import Fenced, new_uuid
from protocol.kafka.error_codes import ErrorCode
from protocol.records.batch import RecordBatch
from protocol.records.builder import build_batch
from protocol.records.record import Record

SUBJECT = "orders"
EPOCH = 1
STORES = [new_uuid() for _ in range(3)]


def answer(store: str, next_sequence: int) -> Fenced:
    """A store's acceptance of the claim at EPOCH, holding the leader of epoch 0's log up to `next_sequence`."""
    return Fenced(new_uuid(), store, new_uuid(), SUBJECT, EPOCH, 1, next_sequence, 0)


def batch_at(offset: int) -> bytes:
    return build_batch([Record(offset, 1000, None, b"v%d" % offset)], partition_leader_epoch=0)


def all_accept(next_sequence: int) -> dict[str, Fenced]:
    return {store: answer(store, next_sequence) for store in STORES}


class Stores:
    """Three stores live; each claim is answered by the next set of answers given. They hold
    `batches` (from sequence 0) and return none of them to the first read-back of each
    address in `unreadable`."""

    def __init__(self, *claims: dict[str, Fenced], batches: tuple[bytes, ...] = (), unreadable: frozenset = frozenset(),
                 answer_s: float = 0):
        self.claims = list(claims)
        self.batches = batches
        self.unreadable = set(unreadable)
        self.answer_s = answer_s  # how long the stores take to answer a claim
        self.watcher = None
        self.released: list[str] = []

    def live_stores(self) -> int:
        return len(STORES)

    def live_stores_for(self, partition: ProducerPartition) -> int:
        return len(STORES)

    async def fence(self, subject: str, address: str, epoch: int, won) -> FenceOutcome:
        claim = self.claims.pop(0)
        await trio.sleep(self.answer_s)
        return FenceOutcome(epoch, claim)

    async def contents(self, subject: str, address: str, head: int, first: int = 0):
        if address in self.unreadable:
            self.unreadable.remove(address)
            raise StoresUnavailable(f"stores did not return {subject}/{address} from {first}")
        for sequence in range(first, head + 1):
            yield sequence, self.batches[sequence]

    def host(self, subject: str, address: str, next_sequence: int, epoch=None, epochs=()) -> ProducerPartition:
        producer = SimpleNamespace(unacked=UnackedBytes(1 << 20), drop=None,  # publishes to nowhere
                                   node=SimpleNamespace(publisher=SimpleNamespace(send_soon=lambda messages: None)))
        return ProducerPartition(producer, subject, address, next_sequence, epoch, epochs)

    def release(self, partition: ProducerPartition) -> None:
        self.released.append(partition.uuid)

    async def read(self, subject: str, address: str, sequence: int, count: int) -> list:
        return []


class Sharing:
    """The cluster's part a takeover uses: where it tells that it serves a partition, and
    where another gateway leads one (`leaders`) and serves it (`continued_at`)."""

    def __init__(self):
        self.served: list[tuple[str, int, int]] = []
        self.leaders: dict[tuple[str, int], int] = {}  # epochs of other gateways' leaderships
        self.continued_at: dict[tuple[str, int], tuple[int, int]] = {}

    async def serving(self, topic_id: str, index: int, epoch: int, start: int) -> None:
        self.served.append((topic_id, index, epoch))

    def moved(self, topic_id: str, index: int, epoch: int) -> bool:
        return self.leaders.get((topic_id, index), -1) > epoch

    def continued(self, topic_id: str, index: int) -> tuple[int, int] | None:
        return self.continued_at.get((topic_id, index))


def registry_of(stores: Stores, partitions: int = 1, **settings) -> tuple[TopicRegistry, Topic]:
    registry = TopicRegistry(BrokerSettings(**{"expected_stores": 3, "embedded_stores": 0, **settings}), stores,
                             None, None, Sharing())
    topic = Topic(SUBJECT, uuid.uuid4(), 1, [PartitionState(new_uuid()) for _ in range(partitions)],
                  partitions=[None] * partitions)
    registry.topics[SUBJECT] = topic
    return registry, topic


async def test_a_takeover_waits_for_a_quorum_of_the_live_stores_not_of_the_expected_ones(autojump_clock):
    """expected.stores left at 1 while three stores run with min.insync.replicas=2: a write
    acknowledged by two of them may be missing from the third, whose answer came first (the
    others' were late). Continuing after it would announce a start below that write, and the
    stores holding it would truncate it: the claim fails until two stores answered."""
    behind = {STORES[0]: answer(STORES[0], 10)}
    registry, topic = registry_of(Stores(behind, all_accept(25)), expected_stores=1, min_insync_replicas=2)
    with pytest.raises(TakeoverFailed, match="1 of 3 stores accepted"):
        await registry._fence(topic, 0, topic.partition_states[0], EPOCH)
    outcome = await registry._fence(topic, 0, topic.partition_states[0], EPOCH)
    assert outcome.start == 25


async def test_a_log_no_store_returns_leaves_the_partition_unled_until_a_retry_reads_it(autojump_clock):
    """The stores accept the claim but return nothing of the log (a store frozen after its
    answer): the partition stays unled here, its neighbour is led, and the takeover is tried
    again once the backoff passed, not before."""
    batches = (batch_at(0), batch_at(1))
    stores = Stores(all_accept(2), all_accept(2), all_accept(2), batches=batches)
    registry, topic = registry_of(stores, partitions=2)
    stores.unreadable.add(topic.partition_states[0].address)
    wanted = {(str(topic.topic_id), 0): EPOCH, (str(topic.topic_id), 1): EPOCH}
    async with trio.open_nursery() as nursery:
        registry._nursery = nursery
        wait = await registry.lead(wanted)
        assert wait == BACKOFF_S[0]
        assert topic.partitions[0] is None
        assert topic.partitions[1].next_offset == 2
        assert await registry.lead(wanted) == pytest.approx(BACKOFF_S[0]), "retried before its backoff"
        assert len(stores.claims) == 1
        await trio.sleep(wait)
        assert await registry.lead(wanted) is None
        assert topic.partitions[0].leader_epoch == EPOCH
        assert [served[1] for served in registry.sharing.served] == [1, 0], "served once each, once led"
        nursery.cancel_scope.cancel()


async def test_failed_takeovers_back_off_longer_and_are_forgotten_when_the_leadership_moves(autojump_clock):
    registry, topic = registry_of(Stores(*[{}] * 6))
    wanted = {(str(topic.topic_id), 0): EPOCH}
    waits = []
    for _ in range(6):
        waits.append(await registry.lead(wanted))
        await trio.sleep(waits[-1])
    first, longest = BACKOFF_S
    assert waits == [first, 2 * first, 4 * first, 8 * first, longest, longest]
    assert await registry.lead({}) is None
    assert registry.takeover_retries.due((str(topic.topic_id), 0), EPOCH), "a new leadership starts at once"


async def test_a_log_read_back_that_does_not_index_fails_the_takeover_not_the_gateway(autojump_clock):
    """Two batches at the same offset: no gateway could index the log, and ending each in turn
    as the leadership moves on would take the cluster down; the partition alone stays unled."""
    registry, topic = registry_of(Stores(all_accept(2), batches=(batch_at(0), batch_at(0))))
    assert await registry.lead({(str(topic.topic_id), 0): EPOCH}) == BACKOFF_S[0]
    assert topic.partitions == [None]


async def test_takeovers_of_several_partitions_run_concurrently_up_to_the_bound(autojump_clock):
    """Five partitions named led here, each claim answered after a second, three taken over at
    once: all are led after two seconds, not five."""
    registry, topic = registry_of(Stores(*[all_accept(0)] * 5, answer_s=1), partitions=5, concurrent_takeovers=3)
    async with trio.open_nursery() as nursery:
        registry._nursery = nursery
        started = trio.current_time()
        assert await registry.lead({(str(topic.topic_id), index): EPOCH for index in range(5)}) is None
        assert trio.current_time() - started == pytest.approx(2)
        assert [partition.leader_epoch for partition in topic.partitions] == [EPOCH] * 5
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("in_next_log", "answer"), [(True, None), (False, ErrorCode.NOT_LEADER_OR_FOLLOWER)])
async def test_produce_waiting_when_the_leadership_moves_is_answered_as_the_next_leader_continues(
        autojump_clock, in_next_log, answer):
    """A batch published here is on its way to the stores when the partition is given to
    another gateway, whose fence may come before or after it. Its produce waits until that
    gateway serves the partition: written if the log it continues holds the batch, else
    NOT_LEADER_OR_FOLLOWER, which an idempotent producer (librdkafka) takes for not written and
    may send again under a new producer epoch, where a batch in the log would be written twice."""
    registry, topic = registry_of(Stores(all_accept(0)))
    key = (str(topic.topic_id), 0)
    answers = []
    async with trio.open_nursery() as nursery:
        registry._nursery = nursery
        await registry.lead({key: EPOCH})
        partition = topic.partitions[0]
        _, sequence, _ = await partition.append(RecordBatch(memoryview(bytearray(batch_at(0)))))

        async def produce_waits():
            try:
                await partition.wait_stored(sequence, 1)
                answers.append(None)
            except KafkaError as exc:
                answers.append(exc.code)

        nursery.start_soon(produce_waits)
        registry.sharing.leaders[key] = EPOCH + 1
        await registry.lead({})
        assert topic.partitions == [None]
        with pytest.raises(KafkaError, match="no longer leads"):
            await partition.append(RecordBatch(memoryview(bytearray(batch_at(1)))))
        await trio.sleep(1)
        assert answers == [], "answered before the next leader served"
        registry.sharing.continued_at[key] = (EPOCH + 1, sequence + 1 if in_next_log else sequence)
        await registry.lead({})
        await trio.sleep(0)
        assert answers == [answer]
        assert registry.storage.released == [partition.mesh.uuid]
        nursery.cancel_scope.cancel()
