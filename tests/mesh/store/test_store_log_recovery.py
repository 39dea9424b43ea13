"""StoreLog after crashes: torn tails are cut, durable damage is reported."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_log_helpers import ADDRESS, content_for, fill, sequences
from structlog.testing import capture_logs

from gateway.mesh.store.entry import HEADER_SIZE
from gateway.mesh.store.store_log import CorruptLogError, StoreLog

REPOSITORY = Path(__file__).resolve().parents[3]
NEVER = 10**9


def crashed_copy(tmp_path: Path, *, synced: int, unsynced: int) -> Path:
    """A data directory as a crash would leave it: `synced` entries fsynced,
    `unsynced` more handed to the OS only. The store is still open when copied."""
    with StoreLog(tmp_path / "live") as store:
        fill(store, "t", synced)
    live = StoreLog(tmp_path / "live", fsync="interval", fsync_interval_ms=NEVER)
    fill(live, "t", unsynced, start=synced)
    live.sync()
    snapshot = tmp_path / "snapshot"
    shutil.copytree(tmp_path / "live", snapshot)
    live.close()
    return snapshot


def entry_position(sequence: int) -> int:
    """Where an entry written by fill() from sequence 0 starts in the first segment."""
    return sum(HEADER_SIZE + len(content_for(earlier)) for earlier in range(sequence))


def only_log_file(directory: Path) -> Path:
    (path,) = directory.glob("*/*/*.log")
    return path


def entries_after(snapshot: Path, work: Path, damage) -> list[int]:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(snapshot, work)
    damage(only_log_file(work))
    with StoreLog(work) as store:
        return sequences(store, "t")


@pytest.mark.parametrize("synced", [0, 5])
def test_cut_anywhere_in_the_unsynced_entry(tmp_path, synced):
    snapshot = crashed_copy(tmp_path, synced=synced, unsynced=1)
    end = entry_position(synced + 1)
    for cut in range(entry_position(synced), end + 1):
        def truncate(path, cut=cut):
            os.truncate(path, cut)
        expected = synced + 1 if cut == end else synced
        assert entries_after(snapshot, tmp_path / "work", truncate) == list(range(expected)), cut


def test_cut_tail_is_logged_and_the_log_continues(tmp_path):
    snapshot = crashed_copy(tmp_path, synced=3, unsynced=2)
    os.truncate(only_log_file(snapshot), entry_position(5) - 1)
    with capture_logs() as logs, StoreLog(snapshot) as store:
        assert store.head("t", ADDRESS) == 3
        fill(store, "t", 10, start=4)
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == ["store_log.torn_tail"]
    with StoreLog(snapshot) as store:
        assert sequences(store, "t") == list(range(14))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.one_of(st.binary(min_size=1, max_size=200), st.just(bytes(4096)),
                         st.binary(min_size=HEADER_SIZE, max_size=HEADER_SIZE).map(lambda b: b * 3)),
       synced=st.sampled_from([0, 4]), unsynced=st.sampled_from([1, 3]))
def test_garbage_tail_is_cut(tmp_path_factory, garbage, synced, unsynced):
    tmp_path = tmp_path_factory.mktemp("garbage")
    snapshot = crashed_copy(tmp_path, synced=synced, unsynced=unsynced)

    def append_garbage(path):
        with open(path, "ab") as file:
            file.write(garbage)
    assert entries_after(snapshot, tmp_path / "work", append_garbage) == list(range(synced + unsynced))


def test_damaged_unsynced_entry_drops_it_and_all_after(tmp_path):
    snapshot = crashed_copy(tmp_path, synced=2, unsynced=3)
    damage_at = entry_position(2) + HEADER_SIZE + 1

    def flip(path):
        with open(path, "r+b") as file:
            file.seek(damage_at)
            byte = file.read(1)
            file.seek(damage_at)
            file.write(bytes([byte[0] ^ 1]))
    assert entries_after(snapshot, tmp_path / "work", flip) == [0, 1]


def test_missing_durable_bytes_are_refused(tmp_path):
    with StoreLog(tmp_path) as store:
        fill(store, "t", 5)
    path = only_log_file(tmp_path)
    os.truncate(path, path.stat().st_size - 1)
    with capture_logs() as logs, pytest.raises(CorruptLogError):
        StoreLog(tmp_path)
    assert logs[0]["log_level"] == "error"


def test_damage_in_durable_data_fails_reads_loudly(tmp_path):
    with StoreLog(tmp_path) as store:
        fill(store, "t", 5)
    path = only_log_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[entry_position(1) + HEADER_SIZE] ^= 0xFF
    path.write_bytes(data)
    with StoreLog(tmp_path) as store:
        assert [e.sequence for e in store.read("t", ADDRESS, 0, 1, 10**6)] == [0]
        assert sequences(store, "t", start=2) == [2, 3, 4]
        with capture_logs() as logs, pytest.raises(CorruptLogError):
            list(store.read("t", ADDRESS, 0, 10, 10**6))
    assert logs[0]["event"] == "store_log.corrupt_entry" and logs[0]["log_level"] == "error"


def test_gap_between_segments_is_refused(tmp_path):
    with StoreLog(tmp_path, segment_bytes=100) as store:
        fill(store, "t", 20, start=1)
    middle_segment = sorted(tmp_path.glob("*/*/*.log"))[1]
    middle_segment.unlink()
    with pytest.raises(CorruptLogError):
        StoreLog(tmp_path, segment_bytes=100)


def test_lost_index_is_rebuilt(tmp_path):
    with StoreLog(tmp_path, segment_bytes=20_000) as store:
        fill(store, "t", 400)
    for index in tmp_path.glob("*/*/*.idx"):
        index.write_bytes(os.urandom(100))
    with StoreLog(tmp_path, segment_bytes=20_000) as store:
        assert sequences(store, "t") == list(range(400))
        assert sequences(store, "t", start=250) == list(range(250, 400))


def test_index_records_lost_behind_a_durable_point_are_rebuilt(tmp_path):
    with StoreLog(tmp_path, segment_bytes=20_000) as store:
        fill(store, "t", 400)
    index_sizes = {}
    for index in tmp_path.glob("*/*/*.idx"):
        index_sizes[index] = index.stat().st_size
        with open(index, "r+b") as file:
            file.seek(32)
            file.write(bytes(index_sizes[index] - 32))
    with StoreLog(tmp_path, segment_bytes=20_000) as store:
        assert sequences(store, "t", start=250) == list(range(250, 400))
        assert sequences(store, "t") == list(range(400))
    assert {index: index.stat().st_size for index in index_sizes} == index_sizes


def test_lost_index_records_and_torn_tail_together(tmp_path):
    snapshot = crashed_copy(tmp_path, synced=300, unsynced=5)
    (index,) = snapshot.glob("*/*/*.idx")
    with open(index, "r+b") as file:
        file.seek(32)
        file.write(bytes(index.stat().st_size - 32))
    os.truncate(only_log_file(snapshot), entry_position(305) - 1)
    with StoreLog(snapshot) as store:
        assert sequences(store, "t", start=200) == list(range(200, 304))
    assert index.stat().st_size > 40


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import structlog
    sys.path[:0] = [{repository!r}, {helpers!r}]
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    from gateway.mesh.store.store_log import StoreLog
    from store_log_helpers import fill
    store = StoreLog(Path({directory!r}), segment_bytes=50_000)
    sequence = 0
    while True:
        fill(store, "t", 7, start=sequence)
        fill(store, "u", 7, start=sequence)
        sequence += 7
        store.sync()
        print(sequence - 1, flush=True)
""")


def test_everything_reported_synced_survives_sigkill(tmp_path):
    script = WRITER.format(repository=str(REPOSITORY), helpers=str(Path(__file__).parent),
                           directory=str(tmp_path))
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    reported = [int(writer.stdout.readline()) for _ in range(60)]
    writer.send_signal(signal.SIGKILL)
    reported += [int(line) for line in writer.stdout.read().split()]
    writer.wait()
    with StoreLog(tmp_path, segment_bytes=50_000) as store:
        for subject in ("t", "u"):
            head = store.head(subject, ADDRESS)
            assert head >= reported[-1]
            assert sequences(store, subject) == list(range(head + 1))
