"""Fencing at the stores: FENCE claims, refusal of older epochs, EPOCH-ACKs, truncation, restarts.

Leaders are Producer nodes in the test; stores are real ones (StoreLog on disk), each
in a scope of its own so that it can be stopped and started again on its directory.
"""

import itertools
import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from unittest.mock import patch

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from gateway.mesh import dafka_producer
from gateway.mesh.dafka_producer import Producer
from gateway.mesh.leader_epochs import NO_EPOCH, epoch_at, first_divergence
from gateway.mesh.store import fences
from gateway.mesh.store.fences import FenceBook, PartitionFence, batch_epoch
from gateway.mesh.store.reader import StoreReader
from gateway.mesh.store.store_node import run_store
from gateway.mesh.store.writer import StoreWriter
from gateway.mesh.tower import run_tower
from gateway.settings.table import StoreSettings
from gateway.storage.mesh_storage import FenceOutcome
from gateway.zmq_trio import zmq_context
from protocol.dafka import Fence, Fenced, Fetch, new_uuid
from protocol.dafka import Record as DafkaRecord
from protocol.journal.discard_directive import DISCARD_SUBJECT, Discard, encode_discard
from protocol.records.builder import build_batch
from protocol.records.record import Record
from tests.mesh.memory_log import Entry, MemoryLog

SUBJECT = "orders"


def batch(epoch: int, text: str) -> bytes:
    """A Kafka v2 batch stamped with leader `epoch`, as the gateway publishes them."""
    return build_batch([Record(0, 1000, None, text.encode())], partition_leader_epoch=epoch)


class Store:
    """A store that can be stopped and started again on its directory."""

    def __init__(self, nursery, context, config, directory):
        self.nursery = nursery
        self.args = (context, config, StoreSettings(store_db=directory))
        self.writer = None
        self._scope = None
        self._stopped = None

    async def start(self) -> None:
        self._scope, self._stopped = trio.CancelScope(), trio.Event()

        async def run(task_status):
            try:
                with self._scope:
                    await run_store(*self.args, task_status=task_status)
            finally:
                self._stopped.set()

        self.writer, _ = await self.nursery.start(run)

    async def stop(self) -> None:
        self._scope.cancel()
        await self._stopped.wait()

    def contents(self, partition: str) -> list[tuple[int, bytes]]:
        log = self.writer.log
        first = log.first(SUBJECT, partition)
        if first is None:
            return []
        return [(entry.sequence, bytes(entry.content)) for entry in log.read(SUBJECT, partition, first, 10_000, 1 << 30)]


@pytest.fixture
async def mesh(tmp_path, config):
    """(stores factory, producers factory) on a running tower. The nodes run in a nursery
    inside the ZeroMQ context, so that they have ended before its sockets are destroyed."""
    with zmq_context() as context, ExitStack() as closing:
        async with trio.open_nursery() as nursery:
            await nursery.start(run_tower, context, config)

            numbers = itertools.count()

            async def stores(count: int) -> list[Store]:
                started = [Store(nursery, context, config, tmp_path / f"store-{next(numbers)}")
                           for _ in range(count)]
                for store in started:
                    await store.start()
                return started

            async def producer() -> Producer:
                node = closing.enter_context(_closing(Producer(context, config)))
                await nursery.start(node.run)
                return node

            yield stores, producer
            nursery.cancel_scope.cancel()


class _closing:
    def __init__(self, node):
        self.node = node

    def __enter__(self):
        return self.node

    def __exit__(self, *_):
        self.node.close()


async def publish_acked(partition, epoch: int, texts: list[str], stores: int) -> int:
    """Publish batches of `epoch` and wait until `stores` stores hold them; the last sequence."""
    first = await partition.publish_many([batch(epoch, text) for text in texts])
    last = first + len(texts) - 1
    await partition.wait_acked(last, stores)
    assert partition.deposed_by is None
    return last


async def claim(producer, partition: str, epoch: int, stores: int) -> FenceOutcome:
    """The answers of `stores` stores to a claim (none decides it before all answered)."""
    return FenceOutcome(epoch, await producer.fence(SUBJECT, partition, epoch, lambda: stores,
                                                    lambda answers: False, timeout_s=20))


async def wait_deposed(partition) -> None:
    while partition.deposed_by is None:
        await trio.sleep(0.02)


async def test_a_fence_refuses_the_old_leaders_records_and_acks_the_new_ones(mesh):
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        stores = await stores_of(2)
        old, new = await producer_of(), await producer_of()
        address = new_uuid()
        deposed = old.host(SUBJECT, uuid=address)
        await publish_acked(deposed, 0, ["a", "b", "c"], stores=2)

        outcome = await claim(new, address, 1, stores=2)
        assert outcome.won(stores=2, min_insync=2)
        assert outcome.start == 3
        assert {(a.head, a.head_epoch) for a in outcome.answers.values()} == {(2, 0)}

        late = await deposed.publish(batch(0, "late"))  # after the fence: refused
        await deposed.wait_acked(late, 1)  # returns once a fenced store's EPOCH-ACK deposed it
        assert deposed.deposed_by is not None and deposed.acked_through(1) < late

        leader = new.host(SUBJECT, uuid=address, next_sequence=outcome.start, epoch=1)
        await publish_acked(leader, 1, ["d", "e"], stores=2)
        for store in stores:
            assert [(s, batch_epoch(c)) for s, c in store.contents(address)] == [(0, 0), (1, 0), (2, 0),
                                                                                (3, 1), (4, 1)]
            assert b"late" not in b"".join(c for _, c in store.contents(address))


async def test_a_fence_of_an_equal_or_lower_epoch_is_refused_and_a_retry_accepted(mesh):
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        await stores_of(1)
        first, second = await producer_of(), await producer_of()
        address = new_uuid()
        assert (await claim(first, address, 2, stores=1)).won(stores=1, min_insync=1)
        for epoch in (2, 1):
            refused = await claim(second, address, epoch, stores=1)
            assert not refused.accepted and refused.newest_epoch == 2
        assert (await claim(first, address, 2, stores=1)).won(stores=1, min_insync=1)  # its own claim again
        assert (await claim(second, address, 3, stores=1)).won(stores=1, min_insync=1)


async def test_the_fence_survives_a_store_restart(mesh):
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        [store] = await stores_of(1)
        old, new = await producer_of(), await producer_of()
        address = new_uuid()
        deposed = old.host(SUBJECT, uuid=address)
        await publish_acked(deposed, 0, ["a"], stores=1)
        assert (await claim(new, address, 4, stores=1)).won(stores=1, min_insync=1)
        await store.stop()
        await store.start()
        assert not (await claim(old, address, 4, stores=1)).accepted
        await deposed.publish(batch(0, "late"))
        await wait_deposed(deposed)
        assert [c for _, c in store.contents(address)] == [batch(0, "a")]


async def test_a_store_that_connects_later_hears_the_announcement_at_once(mesh, monkeypatch):
    """A store that missed the claim and the announcement at hosting learns the fence when its
    writer subscribes, not at the periodic repeat (put out of reach here)."""
    monkeypatch.setattr(dafka_producer, "ANNOUNCE_EVERY_HEADS", 1_000_000)
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        [first] = await stores_of(1)
        leader = await producer_of()
        address = new_uuid()
        assert (await claim(leader, address, 3, stores=1)).won(stores=1, min_insync=1)
        leader.host(SUBJECT, uuid=address, next_sequence=5, epoch=3)
        [later] = await stores_of(1)
        while (fence := later.writer.fences.get((SUBJECT, address))) is None:
            await trio.sleep(0.02)
        assert (fence.epoch, fence.start) == (3, 5)


async def test_a_diverged_tail_is_truncated_where_the_new_leader_writes(mesh):
    """Store 1 misses the end of epoch 1, which only store 2 took; the epoch-2 leader, fenced
    by store 1 alone, continues after store 1's head; store 2, back, truncates its tail
    there and takes the new records: its ACKs then count for the new leader."""
    stores_of, producer_of = mesh
    with trio.fail_after(90):
        one, two = await stores_of(2)
        first, second = await producer_of(), await producer_of()
        address = new_uuid()
        assert (await claim(first, address, 1, stores=2)).won(stores=2, min_insync=2)
        old = first.host(SUBJECT, uuid=address, epoch=1)
        await publish_acked(old, 1, ["a", "b"], stores=2)
        await one.stop()
        await publish_acked(old, 1, ["only on two 2", "only on two 3", "only on two 4"], stores=1)
        await two.stop()
        await one.start()

        outcome = await claim(second, address, 2, stores=1)
        assert outcome.won(stores=2, min_insync=2) and outcome.start == 2
        new = second.host(SUBJECT, uuid=address, next_sequence=2, epoch=2)
        await publish_acked(new, 2, ["c", "d"], stores=1)
        await two.start()
        await new.wait_acked(3, stores=2)  # store 2 truncated 2..4 and took 2..3 again
        assert [(s, batch_epoch(c)) for s, c in two.contents(address)] == [(0, 1), (1, 1), (2, 2), (3, 2)]
        assert two.contents(address) == one.contents(address)
        await wait_deposed(old)


async def test_two_claimants_with_equal_epochs_never_both_win(mesh):
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        await stores_of(3)
        claimants = [await producer_of(), await producer_of()]
        address = new_uuid()
        outcomes = []

        async def claim_into(producer):
            outcomes.append(await claim(producer, address, 7, stores=3))

        async with trio.open_nursery() as both:
            for producer in claimants:
                both.start_soon(claim_into, producer)
        assert sum(len(outcome.accepted) for outcome in outcomes) == 3  # each store accepted one
        assert [outcome.won(stores=3, min_insync=2) for outcome in outcomes].count(True) == 1


async def test_a_claim_won_by_a_quorum_waits_for_no_other_store(mesh):
    """Three stores expected, two run (the third frozen, say) and min.insync.replicas=2: their
    acceptance wins, and the claim ends then, not after the timeout waiting for the third."""
    stores_of, producer_of = mesh
    await stores_of(2)
    producer = await producer_of()
    with trio.fail_after(10):
        answers = await producer.fence(SUBJECT, new_uuid(), 1, lambda: 3,
                                       lambda answers: FenceOutcome(1, answers).won(stores=3, min_insync=2),
                                       timeout_s=60)
    assert len(FenceOutcome(1, answers).accepted) == 2


def test_the_newest_epoch_wins_over_a_longer_older_log():
    """Raft's rule: a longer log of an older epoch may hold what no quorum acknowledged."""
    store_a, store_b = new_uuid(), new_uuid()
    outcome = FenceOutcome(3, {
        store_a: Fenced(new_uuid(), store_a, new_uuid(), SUBJECT, 3, 1, 61, 1),
        store_b: Fenced(new_uuid(), store_b, new_uuid(), SUBJECT, 3, 1, 56, 2),
    })
    assert outcome.start == 56


def test_the_fence_admits_older_epochs_only_below_the_new_leaders_start():
    fence = PartitionFence(epoch=5, requester="R", floor=10)
    assert fence.admits(9, 4) and not fence.admits(10, 4) and fence.admits(10, 5) and fence.admits(11, 6)
    assert not fence.admits(13, None) and fence.admits(3, None)  # not a Kafka batch: only where held before
    fence.start = 20
    assert fence.admits(15, 4) and not fence.admits(20, 4)


def test_the_epoch_cache_names_each_records_epoch_and_spots_divergence():
    fence = PartitionFence(epoch=3, requester="R", floor=0)
    for sequence, epoch in [(0, 1), (1, 1), (2, 2), (5, 3)]:
        fence.note(sequence, epoch)
    assert [fence.epoch_of(s) for s in range(7)] == [1, 1, 2, 2, 2, 3, 3]
    assert fence.diverges(4, 3) and not fence.diverges(5, 3) and not fence.diverges(1, 2)
    fence.cut(2)
    assert fence.epochs == [[1, 0]]


def test_the_book_is_trimmed_to_the_log_when_loaded(tmp_path):
    book = FenceBook(tmp_path)
    assert book.claim(("t", "P"), 2, "R", floor=4, head_epoch=1)
    book.note(("t", "P"), 4, 2)
    book.announce(("t", "P"), 4)
    book.write(book.changes())
    loaded = FenceBook(tmp_path)
    loaded.load({("t", "P"): 3})  # the records from 4 on were not durable
    fence = loaded[("t", "P")]
    assert (fence.epoch, fence.requester, fence.start, fence.floor, fence.epochs) == (2, "R", 4, 4, [[1, 3]])


FENCE_CHANGES = st.lists(st.tuples(st.sampled_from(["claim", "announce", "note", "cut", "forget", "write"]),
                                    st.sampled_from("PQR"), st.integers(0, 6), st.integers(0, 6)), max_size=40)


def as_stored(book: FenceBook) -> dict:
    return {key: (fence.epoch, fence.requester, fence.start, [list(e) for e in fence.epochs])
            for key, fence in book.items()}


@given(FENCE_CHANGES, st.sampled_from([0, 150, 1 << 20]))
def test_the_book_read_back_is_every_fence_as_it_stood_at_the_last_write(changes, rewrite_after):
    """Appended frames and whole rewrites in any order: loading gives the book as written."""
    with tempfile.TemporaryDirectory() as directory, \
            patch.object(fences, "REWRITE_AFTER_BYTES", rewrite_after):
        book, written = FenceBook(Path(directory)), {}
        for change, partition, epoch, sequence in changes:
            key = ("t", partition)
            if change == "write":
                if (pending := book.changes()) is not None:
                    book.write(pending)
                written = as_stored(book)
            elif change == "claim":
                book.claim(key, epoch, "R", floor=sequence, head_epoch=epoch - 1)
            elif change == "forget":
                book.forget(key)
            elif key in book:
                getattr(book, change)(key, sequence, *([epoch] if change == "note" else []))
        loaded = FenceBook(Path(directory))
        loaded.load({key: 1 << 30 for key in written})
        assert as_stored(loaded) == written
        journal = Path(directory) / fences.FENCES_FILE
        if journal.exists():  # rewritten once the appends outweigh the book
            book_bytes = len(fences.encode_frame(json.dumps(list(written.values())).encode()))
            assert journal.stat().st_size <= 2 * max(book_bytes, rewrite_after) + 2048


async def test_a_deleted_topics_partition_goes_whole_and_its_late_records_are_not_taken(mesh, tmp_path):
    """A deletion directive: the partition's files and fence go at once, and stay gone after a
    restart; a record of it below the directive's end that comes later is not stored."""
    stores_of, producer_of = mesh
    with trio.fail_after(60):
        [store] = await stores_of(1)
        leader, gateway = await producer_of(), await producer_of()
        deleted, kept = new_uuid(), new_uuid()
        assert (await claim(leader, deleted, 1, stores=1)).won(stores=1, min_insync=1)
        gone, other = leader.host(SUBJECT, uuid=deleted, epoch=1), leader.host(SUBJECT, uuid=kept)
        await publish_acked(gone, 1, ["a", "b", "c"], stores=1)
        await publish_acked(other, 0, ["x"], stores=1)
        subject_directory = next((tmp_path / "store-0" / "log").glob("s-*"))
        assert {path.name for path in subject_directory.iterdir()} == {"subject", deleted, kept}

        directives = gateway.host(DISCARD_SUBJECT, next_sequence=0)
        await directives.publish(encode_discard(Discard(SUBJECT, deleted, 4, deleted=True)))
        await directives.wait_acked(0, stores=1)
        assert {path.name for path in subject_directory.iterdir()} == {"subject", kept}
        assert (SUBJECT, deleted) not in store.writer.fences
        # Its leader's FENCE announcement, as a leader not yet told of the deletion repeats it, and
        # a late record: neither brings the partition or its fence back.
        leader.node.publisher.send_nowait(gone.announcement())
        await gone.publish(batch(1, "late"))  # sequence 3: on its way when the topic was deleted
        await publish_acked(other, 0, ["y"], stores=1)  # the store took what came before it
        assert store.contents(deleted) == [] and (SUBJECT, deleted) not in store.writer.fences

        # As the gateway leading it does on deletion: else its periodic FENCE announcement
        # (a partition's fence for stores that missed it) claims it again at the restarted store.
        leader.release(gone)
        await store.stop()
        await store.start()
        assert store.contents(deleted) == [] and (SUBJECT, deleted) not in store.writer.fences
        assert [c for _, c in store.contents(kept)] == [batch(0, "x"), batch(0, "y")]
        # The last partition of a subject takes the subject's directory with it.
        await directives.publish(encode_discard(Discard(SUBJECT, kept, 2, deleted=True)))
        await directives.wait_acked(1, stores=1)
        assert not subject_directory.exists()


def test_the_book_is_rewritten_only_once_the_appends_outweigh_it(tmp_path):
    """Each claim appends one entry's frame; the first write, and the one after appends
    that outweigh the last rewrite (one entry, then four), rewrite the whole book."""
    book = FenceBook(tmp_path)
    wholes = []
    with patch.object(fences, "REWRITE_AFTER_BYTES", 0):
        for partition in "PQRSTUVWX":
            book.claim(("t", partition), 1, "R", floor=0, head_epoch=NO_EPOCH)
            write = book.changes()
            book.write(write)
            wholes.append(write.whole)
    assert wholes == [True, False, False, True, False, False, False, False, True]


def test_a_torn_last_frame_is_dropped_and_the_journal_goes_on_after_the_intact_ones(tmp_path):
    book = FenceBook(tmp_path)
    book.claim(("t", "P"), 2, "R", floor=0, head_epoch=NO_EPOCH)
    book.write(book.changes())
    book.claim(("t", "Q"), 3, "R", floor=0, head_epoch=NO_EPOCH)
    book.write(book.changes())
    path = tmp_path / fences.FENCES_FILE
    intact = path.stat().st_size
    path.write_bytes(path.read_bytes()[:-5])  # the last append, cut short by a crash
    loaded = FenceBook(tmp_path)
    loaded.load({})
    assert list(loaded) == [("t", "P")] and path.stat().st_size < intact
    loaded.claim(("t", "R"), 4, "R", floor=0, head_epoch=NO_EPOCH)
    loaded.write(loaded.changes())
    again = FenceBook(tmp_path)
    again.load({})
    assert list(again) == [("t", "P"), ("t", "R")]


def test_a_whole_book_of_an_earlier_store_is_read_and_replaced_by_the_journal(tmp_path):
    entry = {"subject": "t", "partition": "P", "epoch": 2, "requester": "R", "start": 4, "epochs": [[1, 3]]}
    (tmp_path / fences.WHOLE_BOOK_FILE).write_text(json.dumps([entry]))
    book = FenceBook(tmp_path)
    book.load({("t", "P"): 9})
    book.announce(("t", "P"), 5)
    book.write(book.changes())
    assert not (tmp_path / fences.WHOLE_BOOK_FILE).exists()
    loaded = FenceBook(tmp_path)
    loaded.load({("t", "P"): 9})
    assert as_stored(loaded) == {("t", "P"): (2, "R", 5, [[1, 3]])}


async def test_a_newer_epochs_record_truncates_an_older_one_held_there(tmp_path, config):
    """The store's intake, without the mesh: epoch 1 held at 0..3, fenced at 2 (start not
    announced), epoch 2's record for 2 arrives: 2..3 go, and epoch 1's 3 is refused after."""
    address = new_uuid()
    key = (SUBJECT, address)
    with zmq_context() as context, _closing(StoreWriter(context, config, MemoryLog(), uuid=new_uuid(),
                                                         fences=FenceBook(tmp_path))) as writer:
        for sequence in range(4):
            writer._take(key, DafkaRecord(address, SUBJECT, sequence, batch(1, f"old {sequence}")))
        writer._take_fence(Fence(address, new_uuid(), SUBJECT, 2))
        writer._take(key, DafkaRecord(address, SUBJECT, 2, batch(2, "new 2")))
        writer._take(key, DafkaRecord(address, SUBJECT, 3, batch(1, "old 3")))
        first, contents = writer._queued[key]
        assert (first, [bytes(c) for c in contents]) == (0, [batch(1, "old 0"), batch(1, "old 1"), batch(2, "new 2")])
        assert writer._truncations_due == {key: 2}
        assert writer.fences[key].epochs == [[2, 2]]


async def test_the_reader_never_serves_an_older_epochs_records_past_the_new_start(tmp_path, config):
    address = new_uuid()
    book = FenceBook(tmp_path)
    book.claim((SUBJECT, address), 2, new_uuid(), floor=4, head_epoch=1)
    book.announce((SUBJECT, address), 2)
    held = [Entry(0, 0, batch(1, "0")), Entry(1, 0, batch(1, "1")), Entry(2, 0, batch(1, "stale")),
            Entry(3, 0, batch(2, "new"))]
    with zmq_context() as context, _closing(StoreReader(context, config, MemoryLog(), writer_uuid=new_uuid(),
                                                         fences=book, durable={})) as reader:
        fetch = Fetch(address, new_uuid(), SUBJECT, 0, 4)
        assert reader._servable(fetch, held) == held[:2]
        assert reader._servable(Fetch(new_uuid(), new_uuid(), SUBJECT, 0, 4), held) == held  # not fenced


def test_histories_diverge_where_both_know_different_epochs():
    leader = [(1, 0), (2, 51), (3, 56)]
    assert first_divergence([[1, 0]], leader, 60) == 51  # the store missed epoch 2
    assert first_divergence([[1, 0], [2, 51]], leader, 55) is None
    assert first_divergence([[1, 0]], leader, 50) is None  # it holds nothing epoch 2 wrote
    assert first_divergence([], leader, 60) is None  # epochs never known: nothing to compare
    assert [epoch_at(leader, s) for s in (0, 50, 51, 56, 99)] == [1, 1, 2, 3, 3]


async def test_an_announcement_truncates_what_an_epoch_the_store_missed_replaced(tmp_path, config):
    """Held: epoch 1 at 0..5. The epoch-3 leader's log has epoch 2 from 2 and starts at 4:
    the store's 2..5 go, though 2..3 lie below the start."""
    address = new_uuid()
    key = (SUBJECT, address)
    leader = new_uuid()
    with zmq_context() as context, _closing(StoreWriter(context, config, MemoryLog(), uuid=new_uuid(),
                                                         fences=FenceBook(tmp_path))) as writer:
        writer._take_fence(Fence(address, new_uuid(), SUBJECT, 1, 0, ((1, 0),)))
        for sequence in range(6):
            writer._take(key, DafkaRecord(address, SUBJECT, sequence, batch(1, f"old {sequence}")))
        writer._take_fence(Fence(address, leader, SUBJECT, 3, 4, ((1, 0), (2, 2), (3, 4))))
        assert writer._truncations_due == {key: 2}
        writer._take(key, DafkaRecord(address, SUBJECT, 2, batch(2, "epoch 2")))  # below the start: taken
        first, contents = writer._queued[key]
        assert (first, [bytes(c) for c in contents]) == (0, [batch(1, "old 0"), batch(1, "old 1"), batch(2, "epoch 2")])


async def test_a_leader_counts_an_older_epochs_ack_only_where_its_log_has_that_epoch(config):
    with zmq_context() as context, _closing(Producer(context, config)) as producer:
        partition = producer.host(SUBJECT, next_sequence=56, epoch=3, epochs=((1, 0), (2, 51)))
        stale, current, unknown, ours = new_uuid(), new_uuid(), new_uuid(), new_uuid()
        partition.on_epoch_ack(stale, 55, 1)  # its 51..55 are epoch 1's, ours epoch 2's
        partition.on_epoch_ack(current, 55, 2)
        partition.on_epoch_ack(unknown, 40, -1)  # records from before any fence
        partition.on_epoch_ack(ours, 50, 2)  # 50 is epoch 1 in our log
        assert [partition.acked_by(store) for store in (stale, current, unknown, ours)] == [-1, 55, 40, -1]
        assert partition.epochs == ((1, 0), (2, 51), (3, 56))


async def test_a_store_that_missed_an_epoch_truncates_what_it_replaced(mesh):
    """Store C alone takes epoch 1's 2..3; epoch 2 writes 2..3 on A and B; epoch 3 continues
    A's log: C, back, finds from the announced epochs that its 2..3 are not the leader's,
    though they lie below the start, and takes epoch 2's instead."""
    stores_of, producer_of = mesh
    with trio.fail_after(90):
        a, b, c = await stores_of(3)
        address = new_uuid()
        first, second, third = await producer_of(), await producer_of(), await producer_of()
        assert (await claim(first, address, 1, stores=3)).won(stores=3, min_insync=2)
        one = first.host(SUBJECT, uuid=address, epoch=1)
        await publish_acked(one, 1, ["0", "1"], stores=3)
        await a.stop()
        await b.stop()
        await publish_acked(one, 1, ["lost 2", "lost 3"], stores=1)
        await c.stop()
        await a.start()
        await b.start()

        outcome = await claim(second, address, 2, stores=2)
        assert outcome.start == 2 and outcome.won(stores=3, min_insync=2)
        two = second.host(SUBJECT, uuid=address, next_sequence=2, epoch=2, epochs=outcome.epochs)
        await publish_acked(two, 2, ["2", "3"], stores=2)
        second.release(two)  # its announcements end: only epoch 3's reach C
        await c.start()

        outcome = await claim(third, address, 3, stores=3)
        assert outcome.start == 4 and outcome.epochs == ((1, 0), (2, 2))
        three = third.host(SUBJECT, uuid=address, next_sequence=4, epoch=3, epochs=outcome.epochs)
        await publish_acked(three, 3, ["4"], stores=3)
        assert c.contents(address) == a.contents(address)
        assert [(batch_epoch(content), content.endswith(b"lost 2")) for _, content in c.contents(address)] == [
            (1, False), (1, False), (2, False), (2, False), (3, False)]


async def test_an_answer_that_comes_while_the_claim_is_sent_ends_the_claim_at_once(config, autojump_clock):
    """The store answered before the claimant's send returned: no wait for the retry."""
    with zmq_context() as context, _closing(Producer(context, config)) as producer:
        address, store = new_uuid(), new_uuid()

        async def send_answered(message):
            await trio.lowlevel.checkpoint()
            producer._claims[(SUBJECT, address)].take(
                Fenced(producer.node.uuid, store, address, SUBJECT, message.epoch, 1, 0, NO_EPOCH))

        producer.node.send = send_answered
        started = trio.current_time()
        answers = await producer.fence(SUBJECT, address, 1, lambda: 1, lambda answers: False, timeout_s=5)
        assert list(answers) == [store]
        assert trio.current_time() - started < dafka_producer.FENCE_RETRY_S
