"""A partition whose stores emptied an ABORT marker: the gateway forgets the aborted
transaction when it reads the emptied marker, and never reports it with a read that
skipped the marker, nor leaves it out of one that returns its records."""

import itertools
from pickle import PickleBuffer

from gateway.partitions.partition_log import PartitionLog, recovered_state
from gateway.partitions.read_ahead import ReadAheadMemory
from gateway.partitions.transaction_index import AbortedTransaction, TransactionIndex
from protocol.records import ControlType, Record, RecordBatch, build_batch, build_control_batch
from protocol.records.compaction import rebuilt_batch

PRODUCER = 7
ABORTED = AbortedTransaction(PRODUCER, 0, 2)


def transactional(offset: int, value: bytes) -> bytes:
    return build_batch([Record(offset, 1, b"k", value)], producer_id=PRODUCER, producer_epoch=0,
                       base_sequence=offset, transactional=True)


def marker(offset: int, kind: ControlType) -> bytes:
    return build_control_batch(kind, offset=offset, timestamp=1, producer_id=PRODUCER, producer_epoch=0,
                               coordinator_epoch=0)


def emptied(content: bytes) -> bytes:
    return rebuilt_batch(RecordBatch(memoryview(content)), [])


# offsets: aborted 0, plain 1, ABORT 2, committed 3, COMMIT 4
PRODUCED = [transactional(0, b"aborted"), build_batch([Record(1, 1, b"j", b"plain")]),
            marker(2, ControlType.ABORT), transactional(3, b"committed"), marker(4, ControlType.COMMIT)]
CLEANED = [emptied(PRODUCED[0]), PRODUCED[1], emptied(PRODUCED[2]), *PRODUCED[3:]]


class Mesh:
    uuid = "0123456789ABCDEF0123456789ABCDEF"
    next_sequence = len(PRODUCED)

    def watch_acks(self, listener) -> None:
        pass


class Stores:
    """What the stores hold; `cleaning_during_read` swaps the cleaned log in while a read waits."""

    def __init__(self):
        self.log = list(PRODUCED)
        self.cleaning_during_read = None

    async def read(self, subject: str, uuid: str, first: int, count: int) -> list[tuple[int, bytes]]:
        answer = [(sequence, PickleBuffer(self.log[sequence]))  # lends its bytes only, as a zmq frame does
                  for sequence in range(first, min(first + count, len(self.log)))]
        cleaning, self.cleaning_during_read = self.cleaning_during_read, None
        if cleaning is not None:
            cleaning()
        return answer


async def partition(stores: Stores, replayed=PRODUCED) -> PartitionLog:
    """The partition as a gateway that replayed `replayed` (no checkpoint) starts it."""
    offsets, producers, _ = await recovered_state(_contents(replayed))
    return PartitionLog("t", 0, Mesh(), stores.read, offsets, producers, min_insync=1, tail_bytes=0,
                        live_stores=lambda: 1, lag_s=10, read_ahead=ReadAheadMemory(1 << 20))


async def _contents(batches):
    for sequence, content in enumerate(batches):
        yield sequence, content


async def read_committed(log: PartitionLog, offset: int) -> tuple[list[int], list]:
    """The base offsets a fetch of one batch returns, and the aborted transactions it reports."""
    batches = await log.read(offset, 1, limit=log.last_stable_offset)
    aborted = log.aborted_transactions(offset, batches[-1].last_offset + 1) if batches else []
    return [batch.base_offset for batch in batches], aborted


def three_aborted() -> TransactionIndex:
    """An index of three aborted transactions: offsets 0-2, 5-6 and 8-9."""
    index = TransactionIndex()
    for first, marker_offset in ((0, 2), (5, 6), (8, 9)):
        index.begin(PRODUCER, first)
        index.end(PRODUCER, marker_offset, aborted=True)
    return index


def test_the_index_forgets_an_aborted_transaction_by_its_marker():
    index = three_aborted()
    index.forget_aborted(6)
    index.forget_aborted(7)  # no aborted transaction ends there
    assert index.aborted_between(0, 10) == [AbortedTransaction(PRODUCER, 0, 2), AbortedTransaction(PRODUCER, 8, 9)]
    assert index.forgotten == 1
    assert TransactionIndex.restored(index.state()).aborted_between(0, 10) == index.aborted_between(0, 10)


async def test_before_cleaning_the_aborted_transaction_is_reported_with_its_records():
    log = await partition(Stores())
    assert await read_committed(log, 0) == ([0], [ABORTED])
    assert await read_committed(log, 1) == ([1], [ABORTED])  # its marker is still ahead


async def test_a_consumer_midway_is_not_told_of_a_transaction_whose_marker_it_skips():
    stores = Stores()
    log = await partition(stores)
    stores.log = CLEANED
    # at offset 2 the emptied marker is skipped: reporting the transaction would make the
    # consumer skip the producer's committed batch at 3 while waiting for the marker
    assert await read_committed(log, 2) == ([3], [])
    assert log.checkpoint("topic-id").transactions["aborted"] == []


async def test_a_read_that_met_records_of_a_transaction_forgotten_meanwhile_is_done_again():
    stores = Stores()
    log = await partition(stores)

    def cleaned_and_read_by_another():  # another consumer's read met the emptied marker
        stores.log = CLEANED
        log.producers.transactions.forget_aborted(ABORTED.last_offset)

    stores.cleaning_during_read = cleaned_and_read_by_another
    batches = await log.read(0, 1 << 20, limit=log.last_stable_offset)
    assert [batch.base_offset for batch in batches] == [1, 3, 4]  # the aborted record read before is gone
    assert log.aborted_transactions(0, 5) == []


async def test_the_cleaning_check_forgets_markers_emptied_below_the_tombstone_horizon_where_nobody_reads():
    stores = Stores()
    log = await partition(stores)
    stores.log = CLEANED
    log.cleaning.tombstones_before = 2  # the marker, at sequence 2, may not be emptied yet
    await log.forget_emptied_markers()
    assert log.aborted_transactions(0, 5) == [ABORTED]
    log.cleaning.tombstones_before = 3
    await log.forget_emptied_markers()
    assert log.aborted_transactions(0, 5) == []


class TwoStores(Stores):
    """Two stores, one cleaned and one not: each read is answered by the next in turn."""

    def __init__(self):
        super().__init__()
        self.views = itertools.cycle([CLEANED, PRODUCED])

    async def read(self, subject: str, uuid: str, first: int, count: int) -> list[tuple[int, bytes]]:
        self.log = next(self.views)
        return await super().read(subject, uuid, first, count)


async def test_a_store_not_cleaned_yet_serves_no_record_nor_marker_of_a_transaction_another_emptied():
    log = await partition(TwoStores())
    assert await read_committed(log, 2) == ([3], [])  # the cleaned store: the marker is read emptied
    for limit in (log.last_stable_offset, None):  # read_committed, read_uncommitted: the uncleaned store
        batches = await log.read(0, 1 << 20, limit=limit)
        assert [batch.base_offset for batch in batches] == [1, 3, 4]  # the producer's commit is kept
    assert log.aborted_transactions(0, 5) == []


def test_cleaned_aborted_transactions_are_kept_until_the_log_start_passes_their_marker():
    index = three_aborted()
    index.forget_aborted(2)
    index.forget_aborted(9)
    restored = TransactionIndex.restored(index.state())
    assert [offset for offset in range(11) if restored.in_cleaned_transaction(PRODUCER, offset)] == [0, 1, 2, 8, 9]
    assert not restored.in_cleaned_transaction(PRODUCER + 1, 0)
    restored.drop_cleaned_before(3)
    assert [offset for offset in range(11) if restored.in_cleaned_transaction(PRODUCER, offset)] == [8, 9]
    restored.drop_cleaned_before(10)
    assert not restored.has_cleaned


async def test_a_gateway_that_replayed_a_cleaned_store_drops_the_transaction_from_one_not_cleaned_yet():
    log = await partition(Stores(), replayed=CLEANED)  # the marker replayed emptied: ABORT or COMMIT
    batches = await log.read(0, 1 << 20, limit=log.last_stable_offset)
    assert [batch.base_offset for batch in batches] == [1, 3, 4]
    assert log.aborted_transactions(0, 5) == []
