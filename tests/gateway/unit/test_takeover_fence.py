"""Where a gateway that takes a partition over continues its log: after the longest log of a
quorum of the stores that may hold an acknowledged write, never after the first answers alone."""

import uuid
from types import SimpleNamespace

from gateway.settings.table import BrokerSettings
from gateway.storage.mesh_storage import FenceOutcome
from gateway.topics.topic import PartitionState, Topic
from gateway.topics.topic_registry import TopicRegistry
from protocol.dafka import Fenced, new_uuid

SUBJECT = "orders"
EPOCH = 1
STORES = [new_uuid() for _ in range(3)]


def answer(store: str, next_sequence: int) -> Fenced:
    """A store's acceptance of the claim at EPOCH, holding the leader of epoch 0's log up to `next_sequence`."""
    return Fenced(new_uuid(), store, new_uuid(), SUBJECT, EPOCH, 1, next_sequence, 0)


class Stores:
    """Three stores live; each claim is answered by the next set of answers given."""

    def __init__(self, *claims: dict[str, Fenced]):
        self.claims = list(claims)
        self.read = self.watcher = None

    def live_stores(self) -> int:
        return len(STORES)

    async def fence(self, subject: str, address: str, epoch: int) -> FenceOutcome:
        return FenceOutcome(epoch, self.claims.pop(0))


async def test_a_takeover_waits_for_a_quorum_of_the_live_stores_not_of_the_expected_ones(autojump_clock):
    """expected.stores left at 1 while three stores run with min.insync.replicas=2: a write
    acknowledged by two of them may be missing from the third, whose answer came first (the
    others' were late). Continuing after it would announce a start below that write, and the
    stores holding it would truncate it: the claim goes on until two stores answered."""
    behind = {STORES[0]: answer(STORES[0], 10)}
    all_three = {STORES[0]: answer(STORES[0], 10), STORES[1]: answer(STORES[1], 25), STORES[2]: answer(STORES[2], 25)}
    stores = Stores(behind, all_three)
    registry = TopicRegistry(BrokerSettings(expected_stores=1, embedded_stores=0, min_insync_replicas=2), stores,
                             None, None, SimpleNamespace())
    topic = Topic(SUBJECT, uuid.uuid4(), 1, [PartitionState(new_uuid())])
    outcome = await registry._fence(topic, 0, topic.partition_states[0], EPOCH)
    assert outcome.start == 25
    assert not stores.claims, "the claim answered by one store alone was not taken"
