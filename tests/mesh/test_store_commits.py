"""Store commits: on the store's own loop while they are quick, in a worker thread after a slow one
that fsynced; always on the loop while they do not fsync."""

import threading
import time
from contextlib import closing

import pytest
import trio

from gateway.mesh.dafka_producer import Producer
from gateway.mesh.store import writer
from gateway.mesh.store.store_node import run_store
from gateway.mesh.tower import run_tower
from gateway.settings.table import StoreSettings
from gateway.zmq_trio import zmq_context
from tests.mesh.conftest import fast_config
from tests.mesh.memory_log import MemoryLog


class TimedLog(MemoryLog):
    """Records on which thread each sync ran; the first sync takes `first_sync_s` and fsyncs, the
    later ones fsync too, or not (store.fsync interval between fsyncs)."""

    def __init__(self, first_sync_s: float, later_fsync: bool = True):
        super().__init__()
        self.first_sync_s = first_sync_s
        self.later_fsync = later_fsync
        self.sync_threads: list[int] = []

    def fsync_due(self):
        return self.later_fsync or not self.sync_threads

    def sync(self):
        fsyncs = self.fsync_due()
        super().sync()
        self.sync_threads.append(threading.get_ident())
        if len(self.sync_threads) == 1:
            time.sleep(self.first_sync_s)
        return fsyncs


async def commit_threads(tmp_path, log: TimedLog) -> list[int]:
    """Publish records in rounds, each acknowledged before the next: the threads syncs ran on."""
    config = fast_config()
    store = StoreSettings(store_db=tmp_path / "store")
    with zmq_context() as context, trio.fail_after(30), closing(Producer(context, config)) as producer:
        async with trio.open_nursery() as nursery:
            await nursery.start(run_tower, context, config)
            await nursery.start(run_store, context, config, store, log)
            await nursery.start(producer.run)
            partition = producer.host("orders")
            for sequence in range(9, 50, 10):
                await partition.publish_many([b"record %d" % i for i in range(sequence - 9, sequence + 1)])
                await partition.wait_acked(sequence, stores=1)
            nursery.cancel_scope.cancel()
    assert [entry.content for entry in log.entries[("orders", partition.uuid)]] == [
        b"record %d" % i for i in range(50)]
    return log.sync_threads


@pytest.fixture
def quick_below(monkeypatch):
    """Quick enough to stay inline: far above what a commit to memory takes, even on a loaded machine."""
    monkeypatch.setattr(writer, "INLINE_COMMIT_S", 0.5)
    return 0.5


async def test_quick_commits_run_on_the_store_loop(tmp_path, quick_below):
    threads = await commit_threads(tmp_path, TimedLog(first_sync_s=0))
    assert set(threads) == {threading.get_ident()}


async def test_only_the_commit_after_a_slow_one_runs_in_a_worker_thread(tmp_path, quick_below):
    threads = await commit_threads(tmp_path, TimedLog(first_sync_s=quick_below * 2))
    loop = threading.get_ident()
    assert threads[0] == loop and threads[1] != loop  # the first was slow
    assert set(threads[2:]) == {loop}  # the second was quick again


async def test_commits_that_do_not_fsync_stay_on_the_loop_after_a_slow_one(tmp_path, quick_below):
    threads = await commit_threads(tmp_path, TimedLog(first_sync_s=quick_below * 2, later_fsync=False))
    assert set(threads) == {threading.get_ident()}
