"""The store's cleaner over a real StoreLog: what a pass leaves, and what a crash mid-swap leaves."""

import os

from store_log_helpers import ADDRESS

from gateway.mesh.store.cleaner import StoreCleaner
from gateway.mesh.store.segment_swap import CLEANING_DIRECTORY
from gateway.mesh.store.store_log import StoreLog
from protocol.journal.discard_directive import Compaction
from protocol.records import Codec, Record, RecordBatch, build_batch

KEY = ("t", ADDRESS)


def write_versions(store: StoreLog, batches: int, *, start: int = 0) -> None:
    """Batch i holds key k{i % 3} = v{i}, and the record of offset 2i (gaps as a topic has)."""
    for sequence in range(start, start + batches):
        value = None if sequence == 4 else f"v{sequence}".encode()  # a tombstone of k1
        content = build_batch([Record(2 * sequence, sequence, f"k{sequence % 3}".encode(), value)],
                              codec=Codec.GZIP)
        store.append(*KEY, sequence, content, sequence)


def live(store: StoreLog) -> dict[int, tuple]:
    """Sequence -> the records each batch keeps, as (offset, key, value)."""
    return {entry.sequence: [(r.offset, r.key, r.value) for r in RecordBatch(memoryview(entry.content)).records()]
            for entry in store.read(*KEY, 0, 10**6, 10**9)}


def compaction(clean_before: int, tombstones_before: int = 0) -> dict:
    return {KEY: Compaction(clean_before, tombstones_before, 0, 0.5)}


def test_a_pass_keeps_the_newest_of_each_key_below_the_cleaning_point(tmp_path):
    with StoreLog(tmp_path, segment_bytes=300) as store:
        write_versions(store, 12)
        cleaner = StoreCleaner(store, compaction(9), 1 << 20)
        assert cleaner.clean_due() == 1
        records = live(store)
        assert sorted(records) == list(range(12))  # every batch keeps its place
        kept = [record for sequence in range(9) for record in records[sequence]]
        assert kept == [(8, b"k1", None), (12, b"k0", b"v6"), (14, b"k1", b"v7"), (16, b"k2", b"v8")][1:]
        assert [records[s] for s in range(9, 12)] == [[(18, b"k0", b"v9")], [(20, b"k1", b"v10")],
                                                      [(22, b"k2", b"v11")]]
        assert cleaner.clean_due() == 0  # nothing dirty: no pass
    with StoreLog(tmp_path, segment_bytes=300) as store:  # the swapped segments are the log after a restart
        assert live(store) == records


def test_tombstones_go_once_past_their_horizon(tmp_path):
    with StoreLog(tmp_path, segment_bytes=300) as store:
        write_versions(store, 6)
        compactions = compaction(5)
        cleaner = StoreCleaner(store, compactions, 1 << 20)
        cleaner.clean_due()
        assert live(store)[4] == [(8, b"k1", None)]
        compactions[KEY] = Compaction(5, 5, 0, 0.5)
        assert cleaner.clean_due() == 1
        assert live(store)[4] == []


def test_appends_go_on_after_the_active_segment_was_sealed_for_cleaning(tmp_path):
    with StoreLog(tmp_path) as store:  # one big segment: the cleaner seals it
        write_versions(store, 6)
        StoreCleaner(store, compaction(6), 1 << 20).clean_due()
        write_versions(store, 3, start=6)
        assert sorted(live(store)) == list(range(9))
        assert live(store)[8] == [(16, b"k2", b"v8")]


def test_a_swap_not_committed_leaves_the_old_segment_and_a_committed_one_the_new(tmp_path):
    with StoreLog(tmp_path, segment_bytes=300) as store:
        write_versions(store, 12)
        before = live(store)
        directory = store.sealed_below(*KEY, 1)[0]
    first = sorted(name for name in os.listdir(directory) if name.endswith(".log"))[0]
    index = first.removesuffix(".log") + ".idx"
    (directory / CLEANING_DIRECTORY).mkdir()
    (directory / CLEANING_DIRECTORY / first).write_bytes(b"half written")
    (directory / (index + ".swap")).write_bytes(b"not committed")
    with StoreLog(tmp_path, segment_bytes=300) as store:
        assert live(store) == before
        StoreCleaner(store, compaction(9), 1 << 20).clean_due()
        after = live(store)
    assert after != before
    os.rename(directory / first, directory / (first + ".swap"))  # as if the crash came right after the commit
    with StoreLog(tmp_path, segment_bytes=300) as store:
        assert live(store) == after


def test_a_small_map_cleans_in_several_passes_to_the_same_log(tmp_path):
    results = []
    for buffer_bytes in (1 << 20, 60):  # 60 bytes: one key a pass
        directory = tmp_path / str(buffer_bytes)
        with StoreLog(directory, segment_bytes=300) as store:
            write_versions(store, 12)
            cleaner = StoreCleaner(store, {KEY: Compaction(9, 0, 0, 0.0)}, buffer_bytes)  # any dirt is enough
            while cleaner.clean_due():
                pass
            results.append(live(store))
    assert results[0] == results[1]


def test_stores_with_other_segments_and_timing_reach_the_same_log(tmp_path):
    """The directive, not a store's own files or when it cleans, decides the result."""
    results = []
    for number, (segment_bytes, steps) in enumerate([(300, [9]), (10**6, [3, 7, 9]), (150, [5, 9])]):
        with StoreLog(tmp_path / str(number), segment_bytes=segment_bytes) as store:
            write_versions(store, 12)
            compactions = {}
            cleaner = StoreCleaner(store, compactions, 1 << 20)
            for clean_before in steps:
                compactions[KEY] = Compaction(clean_before, 0, clean_before, 0.5)
                cleaner.clean_due()
            results.append(live(store))
    assert results[0] == results[1] == results[2]


def test_a_stopped_cleaner_ends_its_pass_and_leaves_the_log_as_it_was(tmp_path):
    with StoreLog(tmp_path, segment_bytes=300) as store:
        write_versions(store, 12)
        before = live(store)
        cleaner = StoreCleaner(store, compaction(9), 1 << 20)
        cleaner.stop()
        assert cleaner.clean_due() == 0
        assert live(store) == before
        assert not list(tmp_path.glob(f"*/*/{CLEANING_DIRECTORY}"))


def test_a_pass_waits_for_the_dirty_ratio_unless_a_batch_waited_too_long(tmp_path):
    with StoreLog(tmp_path, segment_bytes=300) as store:
        write_versions(store, 13)
        compactions = {KEY: Compaction(6, 0, 0, 0.5)}
        cleaner = StoreCleaner(store, compactions, 1 << 20)
        assert cleaner.clean_due() == 1
        compactions[KEY] = Compaction(9, 0, 0, 0.5)  # 3 dirty batches of 9
        assert cleaner.clean_due() == 0
        compactions[KEY] = Compaction(12, 0, 0, 0.5)  # 6 of 12
        assert cleaner.clean_due() == 1
        compactions[KEY] = Compaction(13, 0, 0, 0.5)  # 1 of 13
        assert cleaner.clean_due() == 0
        compactions[KEY] = Compaction(13, 0, 13, 0.5)  # but max.compaction.lag.ms passed for it
        assert cleaner.clean_due() == 1
