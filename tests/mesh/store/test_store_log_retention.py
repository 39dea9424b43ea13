"""StoreLog: retention, many partitions with few handles, fsync policies."""

import os
import tempfile
from pathlib import Path

import pytest
from store_log_helpers import ADDRESS, fill, sequences

from gateway.mesh.store.store_log import StoreLog

ENTRY_BYTES = 24 + 100


def fill_even(store: StoreLog, subject: str, count: int, *, start: int = 0, timestamp_ms: int = 0) -> None:
    """Entries of ENTRY_BYTES each, so segments hold a known number of them."""
    for sequence in range(start, start + count):
        store.append(subject, ADDRESS, sequence, bytes(100), timestamp_ms)


def segment_count(store: StoreLog) -> int:
    return len(list(store.directory.glob("*/*/*.log")))


def test_retention_by_bytes_keeps_at_least_the_limit(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_bytes=25 * ENTRY_BYTES) as store:
        fill_even(store, "t", 45)
        store.enforce_retention(now_ms=0)
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (20, 44)
        assert segment_count(store) == 3
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:
        assert store.first("t", ADDRESS) == 20
        assert [e.sequence for e in store.read("t", ADDRESS, 0, 100, 10**6)] == []


def test_retention_never_deletes_the_active_segment(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_bytes=0, retention_ms=0) as store:
        fill_even(store, "t", 35)
        store.enforce_retention(now_ms=10**12)
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (30, 34)
        fill_even(store, "t", 1, start=35)
        assert store.head("t", ADDRESS) == 35


def test_retention_by_time_uses_the_newest_entry_of_a_segment(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_ms=1000) as store:
        for sequence in range(30):
            store.append("t", ADDRESS, sequence, bytes(100), 10_000 + sequence * 100)
        newest_of_first_segment = 10_000 + 9 * 100
        store.enforce_retention(now_ms=newest_of_first_segment + 1000)
        assert store.first("t", ADDRESS) == 0
        store.enforce_retention(now_ms=newest_of_first_segment + 1001)
        assert store.first("t", ADDRESS) == 10
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_ms=1000) as store:
        store.enforce_retention(now_ms=10_000 + 19 * 100 + 1001)
        assert store.first("t", ADDRESS) == 20


def test_retention_per_subject(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_bytes=20 * ENTRY_BYTES) as store:
        for subject in ("kept", "short", "default"):
            fill_even(store, subject, 40)
        store.set_retention("kept", retention_bytes=None, retention_ms=None)
        store.set_retention("short", retention_bytes=None, retention_ms=5)
        store.enforce_retention(now_ms=100)
        assert store.first("kept", ADDRESS) == 0
        assert store.first("short", ADDRESS) == 30
        assert store.first("default", ADDRESS) == 20


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def memory_path(tmp_path):
    """A directory in memory where there is one: this test is about handles, not disks."""
    if not os.path.isdir("/dev/shm"):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm") as directory:
        yield Path(directory)


def test_many_partitions_with_few_handles(memory_path):
    addresses = [f"{number:032X}" for number in range(1000)]
    subjects = [f"topic-{number}" for number in range(10)]
    allowed = open_descriptors() + 64 + 1  # the handles and the directory lock (fsync threads close theirs)
    with StoreLog(memory_path, max_open_files=64) as store:
        for round_number in range(2):
            for subject in subjects:
                for address in addresses:
                    store.append(subject, address, round_number, subject.encode() + address.encode(), 0)
                assert open_descriptors() <= allowed
            store.sync()
            assert open_descriptors() <= allowed
        assert len(store.partitions()) == 10_000
        assert [e.sequence for e in store.read("topic-3", addresses[7], 0, 10, 10**6)] == [0, 1]
    with StoreLog(memory_path, max_open_files=64) as store:
        assert len(store.partitions()) == 10_000
        for subject in subjects:
            for address in addresses:
                assert store.head(subject, address) == 1
        read = list(store.read("topic-9", addresses[999], 1, 10, 10**6))
        assert read[0].content == b"topic-9" + addresses[999].encode()


def test_interval_policy_hands_data_to_the_os_on_every_sync(tmp_path):
    store = StoreLog(tmp_path, fsync="interval", fsync_interval_ms=10**9)
    fill(store, "t", 10)
    store.sync()
    (path,) = tmp_path.glob("*/*/*.log")
    assert path.stat().st_size > 0
    with StoreLog(tmp_path / "copy", fsync="interval") as copy:
        assert copy.partitions() == []
    store.close()
    with StoreLog(tmp_path) as store:
        assert sequences(store, "t") == list(range(10))


def test_discard_before_deletes_the_sealed_segments_wholly_below(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:
        fill_even(store, "t", 45)  # segments from 0, 10, 20, 30; 40 is active
        assert store.discard_before("t", ADDRESS, 25) == 2  # 20..29 is not wholly below 25
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (20, 44)
        assert store.discard_before("t", ADDRESS, 44) == 2  # the active segment holds 44
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (40, 44)
        assert segment_count(store) == 1
        assert store.discard_before("elsewhere", ADDRESS, 10) == 0
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (40, 44)
        assert [e.sequence for e in store.read("t", ADDRESS, 0, 100, 10**6)] == []
        assert [e.sequence for e in store.read("t", ADDRESS, 40, 100, 10**6)] == list(range(40, 45))
        fill_even(store, "t", 1, start=45)
        assert store.head("t", ADDRESS) == 45


def test_a_partition_wholly_below_a_discard_starts_over_there(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:
        fill_even(store, "t", 25)
        assert store.discard_before("t", ADDRESS, 100) == 3  # the active segment too
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (100, 99)
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:  # the empty partition remembers where it goes on
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS), store.partitions()) == (100, 99, [("t", ADDRESS)])
        assert [e.sequence for e in store.read("t", ADDRESS, 0, 100, 10**6)] == []
        with pytest.raises(ValueError):
            fill_even(store, "t", 1, start=25)
        fill_even(store, "t", 15, start=100)
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES) as store:
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (100, 114)
        assert [e.sequence for e in store.read("t", ADDRESS, 20, 100, 10**6)] == []
        assert [e.sequence for e in store.read("t", ADDRESS, 0, 100, 10**6)] == []
        assert [e.sequence for e in store.read("t", ADDRESS, 100, 100, 10**6)] == list(range(100, 115))
        fill_even(store, "t", 1, start=115)
        assert store.head("t", ADDRESS) == 115
        assert segment_count(store) == 2


def test_store_wide_retention_spares_the_gateway_subjects(tmp_path):
    with StoreLog(tmp_path, segment_bytes=10 * ENTRY_BYTES, retention_bytes=0, retention_ms=0) as store:
        for subject in ("events", "__dafka_gateway_metadata", "__dafka_gateway_discard"):
            fill_even(store, subject, 35)
        store.enforce_retention(now_ms=10**12)
        assert store.first("events", ADDRESS) == 30
        assert store.first("__dafka_gateway_metadata", ADDRESS) == 0
        assert store.first("__dafka_gateway_discard", ADDRESS) == 0
