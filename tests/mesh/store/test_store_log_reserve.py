"""StoreLog reserves file space ahead of its appends, and gives it back."""

import errno
import os
import shutil

from store_log_helpers import ADDRESS, content_for, fill, sequences
from structlog.testing import capture_logs
from test_store_log_recovery import crashed_copy, entry_position, only_log_file

from gateway.mesh.store.entry import HEADER_SIZE
from gateway.mesh.store.segment import RESERVE_MIN_BYTES
from gateway.mesh.store.store_log import StoreLog


def entries_size(first: int, count: int) -> int:
    return sum(HEADER_SIZE + len(content_for(sequence)) for sequence in range(first, first + count))


def log_sizes(directory) -> list[int]:
    return [path.stat().st_size for path in sorted(directory.glob("*/*/*.log"))]


def test_the_active_segment_reserves_space_and_sealed_ones_keep_none(tmp_path):
    with StoreLog(tmp_path, segment_bytes=4096) as store:
        fill(store, "t", 200)
        store.sync()
        *sealed, active = log_sizes(tmp_path)
        assert sealed and all(size <= 4096 for size in sealed)
        assert active >= RESERVE_MIN_BYTES
        assert sequences(store, "t") == list(range(200))
    assert sum(log_sizes(tmp_path)) == entries_size(0, 200)


def test_a_crash_leaves_reserved_zeros_that_recovery_cuts_quietly(tmp_path):
    snapshot = crashed_copy(tmp_path, synced=3, unsynced=2)
    assert only_log_file(snapshot).stat().st_size > entry_position(5)
    with capture_logs() as logs, StoreLog(snapshot) as store:
        assert sequences(store, "t") == list(range(5))
        fill(store, "t", 5, start=5)
    assert [entry for entry in logs if entry["log_level"] in ("warning", "error")] == []
    assert log_sizes(snapshot) == [entry_position(10)]
    with StoreLog(snapshot) as store:
        assert sequences(store, "t") == list(range(10))


def test_reserved_zeros_right_after_the_durable_point_are_cut_quietly(tmp_path):
    snapshot = tmp_path / "snapshot"
    with StoreLog(tmp_path / "live") as store:
        fill(store, "t", 4)
        store.sync()
        shutil.copytree(tmp_path / "live", snapshot)
    assert only_log_file(snapshot).stat().st_size > entry_position(4)
    with capture_logs() as logs, StoreLog(snapshot) as store:
        assert store.head("t", ADDRESS) == 3
        assert log_sizes(snapshot) == [entry_position(4)]
    assert [entry for entry in logs if entry["log_level"] in ("warning", "error")] == []


def test_a_torn_entry_before_the_reserved_zeros_is_still_reported(tmp_path):
    snapshot = crashed_copy(tmp_path, synced=3, unsynced=2)
    with open(only_log_file(snapshot), "r+b") as log_file:
        log_file.seek(entry_position(4) + HEADER_SIZE)
        log_file.write(b"\xff")
    with capture_logs() as logs, StoreLog(snapshot) as store:
        assert sequences(store, "t") == list(range(4))
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == ["store_log.torn_tail"]


def test_a_failed_reservation_leaves_the_write_to_decide(tmp_path, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "posix_fallocate", full)
    with StoreLog(tmp_path) as store:
        fill(store, "t", 20)
        store.sync()
        assert sequences(store, "t") == list(range(20))
    with StoreLog(tmp_path) as store:
        assert sequences(store, "t") == list(range(20))


def test_reservations_grow_with_the_segment_and_are_bounded(tmp_path):
    with StoreLog(tmp_path) as store:
        for sequence in range(40):
            store.append("t", ADDRESS, sequence, bytes(100_000), 0)
            store.sync()
            (size,) = log_sizes(tmp_path)
            written = (sequence + 1) * (HEADER_SIZE + 100_000)
            assert written <= size <= max(2 * written, written + RESERVE_MIN_BYTES)


def test_the_reserve_is_bounded_by_the_setting_and_zero_turns_it_off(tmp_path):
    for most in (0, 20_000):
        directory = tmp_path / str(most)
        with StoreLog(directory, reserve_max_bytes=most) as store:
            for sequence in range(40):
                store.append("t", ADDRESS, sequence, bytes(1000), 0)
                store.sync()
                (size,) = log_sizes(directory)
                written = (sequence + 1) * (HEADER_SIZE + 1000)
                assert written <= size <= written + max(most, RESERVE_MIN_BYTES if most else 0)
