"""Journal generations: which one replay uses, and compaction into the next one."""

import json
import uuid
from dataclasses import replace

import trio
import trio.testing

from gateway.acls.acl_store import Acls
from gateway.acls.model import AclBinding, Operation, PatternType, Permission, ResourceType
from gateway.group.committed_offsets import Committed
from gateway.group.group_coordinator import GroupCoordinator
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from protocol.journal.discard_directive import Discard
from protocol.journal.journal_records import (
    COMPLETE,
    MAX_GENERATION_GAP,
    existing_generations,
    generation_uuid,
    header,
    replayable,
)

CLUSTER, KIND = "test-cluster", "groups"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUBJECT = f"__dafka_gateway_{KIND}"


class Partition:
    """A hosted partition of `Stores`: records are stored at once, ACKed after `ack_delay`."""

    def __init__(self, uuid: str, records: list[bytes], ack_delay: float):
        self.uuid = uuid
        self.records = records
        self.ack_delay = ack_delay

    @property
    def next_sequence(self) -> int:
        return len(self.records)

    async def publish(self, content: bytes) -> int:
        return await self.publish_many([content])

    async def publish_many(self, contents: list[bytes]) -> int:
        self.records.extend(contents)
        await trio.lowlevel.checkpoint()
        return len(self.records) - len(contents)

    async def wait_acked(self, sequence: int, stores: int) -> None:
        await trio.sleep(self.ack_delay)


class Stores:
    """A stand-in for MeshStorage: partitions of one subject by address."""

    def __init__(self, ack_delay: float = 0.0):
        self.partitions: dict[str, list[bytes]] = {}
        self.ack_delay = ack_delay

    async def heads(self, subject: str) -> dict[str, int]:
        return {address: len(records) - 1 for address, records in self.partitions.items() if records}

    async def contents(self, subject: str, address: str, head: int):
        for sequence, content in enumerate(self.partitions[address][:head + 1]):
            yield sequence, content

    def host(self, subject: str, address: str, next_sequence: int) -> Partition:
        records = self.partitions.setdefault(address, [])
        assert len(records) == next_sequence
        return Partition(address, records, self.ack_delay)

    def release(self, partition: Partition) -> None:
        pass

    def put(self, generation: int, *entries: dict) -> None:
        self.partitions[generation_uuid(CLUSTER, KIND, generation)] = [json.dumps(e).encode() for e in entries]


class Directives:
    """A stand-in for DiscardDirectives: what was sent, in order."""

    def __init__(self):
        self.sent: list[Discard] = []

    async def send(self, discards: list[Discard]) -> None:
        self.sent.extend(discards)


def settings(entries: int = 10_000, size: int = 1 << 30) -> BrokerSettings:
    return BrokerSettings(cluster_id=CLUSTER, journal_compaction_entries=entries, journal_compaction_bytes=size)


def test_generation_0_keeps_the_journals_original_address():
    legacy = uuid.uuid5(uuid.NAMESPACE_URL, f"dafka-gateway:{CLUSTER}:{KIND}").hex.upper()
    assert generation_uuid(CLUSTER, KIND, 0) == legacy
    assert len({generation_uuid(CLUSTER, KIND, g) for g in range(5)}) == 5
    assert generation_uuid("other", KIND, 1) != generation_uuid(CLUSTER, KIND, 1)


def test_generations_are_found_among_the_subjects_heads():
    ours = {generation_uuid(CLUSTER, KIND, g): 7 for g in (0, 1, 3, 3 + MAX_GENERATION_GAP)}
    foreign = {generation_uuid("other", KIND, 2): 1, "0" * 32: 4}
    found = existing_generations(CLUSTER, KIND, {**ours, **foreign})
    assert sorted(found) == [0, 1, 3, 3 + MAX_GENERATION_GAP]
    assert existing_generations(CLUSTER, KIND, foreign) == {}
    beyond = {generation_uuid(CLUSTER, KIND, g): 1 for g in (0, 2 + MAX_GENERATION_GAP)}
    assert sorted(existing_generations(CLUSTER, KIND, beyond)) == [0]


def test_only_a_generation_with_its_snapshot_complete_is_replayable():
    def contents(*entries):
        return [json.dumps(e).encode() for e in entries]

    a, b, c = ({"n": n} for n in range(3))
    assert replayable(0, contents(a, b)) == ([a, b], contents(a, b))
    assert replayable(2, contents(header(2), a, COMPLETE, b, c)) == ([a, b, c], contents(b, c))
    assert replayable(2, contents(header(2), COMPLETE)) == ([], [])
    assert replayable(2, contents(header(2), a, b)) is None  # the gateway died while compacting
    assert replayable(2, contents(header(1), a, COMPLETE)) is None
    assert replayable(2, []) is None


async def test_replay_uses_the_newest_complete_generation():
    stores = Stores()
    stores.put(0, {"n": 0}, {"n": 1})
    stores.put(1, header(1), {"n": 1}, COMPLETE, {"n": 2})
    stores.put(2, header(2), {"n": 2})  # incomplete
    journal = Journal(stores, settings(), KIND, Directives())
    assert await journal.replay() == [{"n": 1}, {"n": 2}]
    assert journal.generation == 1
    await journal.write({"n": 3})
    assert json.loads(stores.partitions[generation_uuid(CLUSTER, KIND, 1)][-1]) == {"n": 3}


async def test_a_legacy_journal_replays_as_generation_0():
    stores = Stores()
    stores.put(0, {"n": 0}, {"n": 1})
    journal = Journal(stores, settings(), KIND, Directives())
    assert await journal.replay() == [{"n": 0}, {"n": 1}]
    assert journal.generation == 0


async def test_compaction_skips_incomplete_generations_and_loses_no_write():
    """Writes racing compactions land in one generation or the next; a restart sees all of them."""
    stores = Stores(ack_delay=0.001)
    stores.put(0, {"key": "a", "value": 0})
    stores.put(1, header(1), {"key": "a", "value": 0})  # incomplete: never appended to
    state: dict[str, int] = {}

    async def run(journal: Journal, nursery: trio.Nursery) -> None:
        for entry in await journal.replay():
            state[entry["key"]] = entry["value"]
        journal.compact_with(nursery, lambda: [{"key": k, "value": v} for k, v in state.items()])

    async def put(journal: Journal, key: str, value: int) -> None:
        state[key] = value
        await journal.write({"key": key, "value": value})

    async with trio.open_nursery() as nursery:
        journal = Journal(stores, settings(entries=5), KIND, Directives())
        await run(journal, nursery)
        assert journal.generation == 0
        async with trio.open_nursery() as writers:
            for n in range(5000):  # until two compactions ran, however the writes were scheduled
                if journal.generation > 2:
                    break
                writers.start_soon(put, journal, f"k{n}", n)  # a key each: no two writes race on one
                await trio.sleep(0)
        assert journal.generation > 2
        assert len(stores.partitions[generation_uuid(CLUSTER, KIND, 1)]) == 2
        written = dict(state)
        nursery.cancel_scope.cancel()  # perhaps in the middle of a compaction

    state.clear()
    restarted = Journal(stores, settings(), KIND, Directives())
    async with trio.open_nursery() as nursery:
        await run(restarted, nursery)
    assert state == written
    assert restarted.generation >= journal.generation


async def test_group_offsets_survive_compactions_and_a_restart():
    stores = Stores()

    async def commit_many(coordinator: GroupCoordinator) -> None:
        for n in range(50):
            commits = {("t", p): Committed(n * 10 + p, -1, f"m{n}", 0) for p in range(3)}
            await coordinator.commit_offsets(f"g{n % 4}", "", None, -1, 8, commits)
        await coordinator.delete_groups(["g3"])

    async with trio.open_nursery() as nursery:
        coordinator = GroupCoordinator(settings(entries=8), Journal(stores, settings(entries=8), "groups", Directives()))
        await nursery.start(coordinator.run)
        await commit_many(coordinator)
        assert coordinator.log.journal.generation >= 4
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        restarted = GroupCoordinator(settings(), Journal(stores, settings(), "groups", Directives()))
        await nursery.start(restarted.run)
        nursery.cancel_scope.cancel()
    assert sorted(restarted.groups) == ["g0", "g1", "g2"]
    for group in ("g0", "g1", "g2"):
        assert restarted.fetch_offsets(group) == coordinator.fetch_offsets(group)
    assert restarted.fetch_offsets("g2")[("t", 1)].offset == 461


async def test_acls_of_one_change_survive_a_compaction_between_their_entries_and_a_restart():
    """One CreateAcls of several bindings journals an entry each and applies them together: a
    compaction due after the first entry must still carry it into the next generation."""
    stores = Stores()
    wanted = [AclBinding(ResourceType.TOPIC, f"t{n}", PatternType.LITERAL, "User:a", "*", Operation.READ,
                         Permission.ALLOW) for n in range(3)]
    acl_settings = replace(settings(entries=1), authorizer_class_name=STANDARD_AUTHORIZER)
    async with trio.open_nursery() as nursery:
        acls = Acls(Journal(stores, acl_settings, "acls", Directives()), acl_settings)
        await nursery.start(acls.run)
        await acls.create(wanted[:1])
        await acls.create(wanted[1:])  # a compaction falls between its entries
        assert acls.journal.generation == 1
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        restarted = Acls(Journal(stores, settings(), "acls", Directives()), acl_settings)
        await nursery.start(restarted.run)
        assert sorted(restarted.bindings) == wanted
        nursery.cancel_scope.cancel()


async def test_a_compaction_writes_no_more_than_was_written_since_the_last():
    stores = Stores()
    journal = Journal(stores, settings(entries=2), KIND, Directives())
    async with trio.open_nursery() as nursery:
        await journal.replay()
        journal.compact_with(nursery, lambda: [{"n": n} for n in range(10)])
        generations = []
        for n in range(25):
            await journal.write({"n": n})
            await trio.testing.wait_all_tasks_blocked()
            generations.append(journal.generation)
        nursery.cancel_scope.cancel()
    # Past 2 entries at first, then past the 10 of each snapshot.
    assert [generations.index(g) for g in (1, 2)] == [2, 13]


async def test_replay_discards_the_generations_below_the_one_it_chose():
    stores = Stores()
    stores.put(0, {"n": 0}, {"n": 1})
    stores.put(1, header(1), {"n": 1}, COMPLETE, {"n": 2})
    stores.put(2, header(2), {"n": 2})  # incomplete: read by every replay, so never discarded
    directives = Directives()
    journal = Journal(stores, settings(), KIND, directives)
    await journal.replay()
    assert journal.generation == 1
    assert directives.sent == [Discard(SUBJECT, generation_uuid(CLUSTER, KIND, 0), 2)]


async def test_each_compaction_discards_the_generation_before_and_never_the_current_one():
    stores, directives = Stores(), Directives()
    journal = Journal(stores, settings(entries=2), KIND, directives)
    async with trio.open_nursery() as nursery:
        await journal.replay()
        journal.compact_with(nursery, lambda: [{"n": n} for n in range(3)])
        for n in range(20):
            await journal.write({"n": n})
            await trio.testing.wait_all_tasks_blocked()
            assert journal.uuid not in {discard.address for discard in directives.sent}
        nursery.cancel_scope.cancel()
    assert journal.generation >= 3
    older = [generation_uuid(CLUSTER, KIND, g) for g in range(journal.generation)]
    assert directives.sent == [Discard(SUBJECT, address, len(stores.partitions[address])) for address in older]

    restarted = Directives()
    await Journal(stores, settings(), KIND, restarted).replay()
    assert restarted.sent == directives.sent  # again, for the stores that missed them


async def test_a_transactions_pending_offsets_survive_compactions_and_a_restart():
    """A lone gateway's group coordinator keeps pending offsets on its journal: a compaction carries
    them, and after a restart the transaction's commit makes them the group's, an abort drops them,
    as the next restart replays."""
    stores = Stores()
    async with trio.open_nursery() as nursery:
        coordinator = GroupCoordinator(settings(entries=4), Journal(stores, settings(entries=4), "groups", Directives()))
        await nursery.start(coordinator.run)
        await coordinator.commit_transactional_offsets("g", (7, 0), {("t", 0): Committed(70, -1, "", 0)})
        await coordinator.commit_transactional_offsets("g", (8, 0), {("t", 1): Committed(80, -1, "", 0)})
        for n in range(12):
            await coordinator.commit_offsets("other", "", None, -1, 8, {("t", 0): Committed(n, -1, "", 0)})
        assert coordinator.log.journal.generation >= 2
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        restarted = GroupCoordinator(settings(), Journal(stores, settings(), "groups", Directives()))
        await nursery.start(restarted.run)
        assert restarted.has_pending_offset("g", "t", 0) and restarted.has_pending_offset("g", "t", 1)
        await restarted.end_transaction(7, commit=True)
        await restarted.end_transaction(8, commit=False)
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        again = GroupCoordinator(settings(), Journal(stores, settings(), "groups", Directives()))
        await nursery.start(again.run)
        nursery.cancel_scope.cancel()
    for replayed in (restarted, again):
        assert {key: c.offset for key, c in replayed.fetch_offsets("g").items()} == {("t", 0): 70}
        assert not replayed.has_pending_offset("g", "t", 0) and not replayed.has_pending_offset("g", "t", 1)
