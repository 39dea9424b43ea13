"""A failed write or fsync: the log is cut back to its last durable point, in memory and on disk."""

import errno
import os

import pytest
from store_log_helpers import ADDRESS, content_for, fill, sequences

from gateway.mesh.store.handles import Files
from gateway.mesh.store.segment import Segment
from gateway.mesh.store.storage_failure import StorageFailed
from gateway.mesh.store.store_log import StoreLog


def failing(number: int):
    def fail(*_):
        raise OSError(number, os.strerror(number))
    return fail


def test_a_failed_fsync_cuts_the_segment_back_to_its_last_durable_point(tmp_path, monkeypatch):
    files = Files(8, 8)
    segment = Segment.create(tmp_path, 0, files)
    for sequence in range(10):
        segment.append(files, sequence, content_for(sequence), sequence)
    segment.sync(files)
    durable = (segment.count, segment.size, segment.max_timestamp_ms)
    for sequence in range(10, 300):  # past one index interval, so the index grows too
        segment.append(files, sequence, content_for(sequence), sequence)
    segment.flush(files)
    assert os.path.getsize(segment.log_path) > durable[1]
    monkeypatch.setattr(os, "fdatasync", failing(errno.EIO))
    with pytest.raises(OSError) as failure:
        segment.sync(files)
    assert failure.value.filename == segment.log_path  # the log line can name the file
    segment.cut_back(files)
    assert (segment.count, segment.size, segment.max_timestamp_ms) == durable
    assert segment.written == segment.synced == durable[1] == os.path.getsize(segment.log_path)
    monkeypatch.undo()
    segment.append(files, 10, content_for(10), 10)  # it goes on from the durable point
    segment.sync(files)
    recovered = Segment(tmp_path, 0, sealed=False)
    recovered.recover(Files(8, 8))
    assert recovered.count == 11 and recovered.size == segment.size


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG])
def test_a_failed_sync_keeps_nothing_since_the_last_good_one(tmp_path, monkeypatch, number):
    with StoreLog(tmp_path / "data", segment_bytes=4096) as store:
        fill(store, "t", 20)
        store.sync()
        fill(store, "t", 40, start=20)  # across segment rolls: sealed ones were synced on the way
        monkeypatch.setattr(os, "fdatasync", failing(number))
        with pytest.raises(StorageFailed) as failure:
            store.sync()
        assert failure.value.errno_name == errno.errorcode[number]
        assert failure.value.path.startswith(str(tmp_path / "data"))
        kept = store.head("t", ADDRESS)
        assert 19 <= kept < 59
        with pytest.raises(RuntimeError):  # a failed log takes no more writes
            fill(store, "t", 1, start=kept + 1)
    monkeypatch.undo()
    with StoreLog(tmp_path / "data", segment_bytes=4096) as reopened:
        assert sequences(reopened, "t") == list(range(kept + 1))  # nothing past the cut comes back


def test_a_failed_write_keeps_nothing_since_the_last_sync(tmp_path, monkeypatch):
    with StoreLog(tmp_path / "data") as store:
        fill(store, "t", 20)
        store.sync()
        fill(store, "t", 20, start=20)  # buffered: written at the sync
        monkeypatch.setattr(os, "pwritev", failing(errno.ENOSPC))
        with pytest.raises(StorageFailed, match="ENOSPC"):
            store.sync()
        assert store.head("t", ADDRESS) == 19
    monkeypatch.undo()
    with StoreLog(tmp_path / "data") as reopened:
        assert sequences(reopened, "t") == list(range(20))


def test_a_failed_append_keeps_nothing_of_its_batch(tmp_path, monkeypatch):
    with StoreLog(tmp_path / "data") as store:
        fill(store, "t", 20)
        store.sync()
        monkeypatch.setattr(os, "pwritev", failing(errno.EDQUOT))
        with pytest.raises(StorageFailed, match="EDQUOT"):  # a batch past the write buffer is written at once
            store.append_many("t", ADDRESS, 20, [bytes(1000)] * 2000, 0)
        assert store.head("t", ADDRESS) == 19
    monkeypatch.undo()
    with StoreLog(tmp_path / "data") as reopened:
        assert sequences(reopened, "t") == list(range(20))
