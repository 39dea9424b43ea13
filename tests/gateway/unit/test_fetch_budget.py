"""A partition read after others filled a fetch's budget (Kafka's minOneMessage off): batches
that fit, and no read at all, of the stores or of the read-ahead, when the first does not."""

from protocol.records import Record, build_batch
from tests.gateway.unit.test_aborted_markers import Mesh, partition

# as many as the partition of test_aborted_markers publishes
BATCHES = [build_batch([Record(2 * n + i, 1000 + n, b"k", bytes(100)) for i in range(2)])
           for n in range(Mesh.next_sequence)]


class Stores:
    """Every batch comes from here (the partition keeps nothing in memory); records the reads."""

    def __init__(self):
        self.asked: list[tuple[int, int]] = []

    async def read(self, subject: str, uuid: str, first: int, count: int) -> list[tuple[int, bytes]]:
        self.asked.append((first, count))
        return [(sequence, BATCHES[sequence]) for sequence in range(first, min(first + count, len(BATCHES)))]


async def test_a_first_batch_larger_than_the_budget_is_not_read():
    stores = Stores()
    log = await partition(stores, BATCHES)
    size = len(BATCHES[0])
    for budget in (0, size - 1):
        assert await log.read(2, budget, limit=8, min_one=False) == []
    assert stores.asked == []
    assert [b.base_offset for b in await log.read(2, size - 1, limit=8)] == [2]  # the first partition's


async def test_batches_that_fit_the_budget_are_read():
    stores = Stores()
    log = await partition(stores, BATCHES)
    size = len(BATCHES[0])
    assert [b.base_offset for b in await log.read(2, 2 * size + 1, limit=8, min_one=False)] == [2, 4]
    assert stores.asked[0][0] == 1
