"""A store whose disk failed is out of sync for the partitions it lacks records of, from the
moment it exits until it holds them, even while it runs again (Kafka takes a replica whose log
directory failed out of the ISR at once)."""

from contextlib import closing

from gateway.storage.mesh_storage import MeshStorage
from gateway.zmq_trio import zmq_context
from tests.mesh.conftest import fast_config


async def test_a_store_restarted_after_its_disk_failed_counts_once_it_holds_what_it_lacked(monkeypatch):
    with zmq_context() as context, closing(MeshStorage(context, fast_config())) as storage:
        monkeypatch.setattr(storage, "live_stores", lambda: 2)
        partition = storage.host("orders", "A" * 32, next_sequence=5)  # sequences 0-4 published, none ACKed
        storage.store_started("store-a")
        storage.store_started("store-b")
        assert storage.live_stores_for(partition) == 2

        storage.store_exited("store-b", disk_failed=False)  # exited, its disk fine: only no longer live
        assert partition.failed_stores == {}
        storage.store_exited("store-a", disk_failed=True)
        assert partition.failed_stores == {"store-a": 4}
        assert storage.live_stores_for(partition) == 2  # down: the live count leaves it out already
        storage.store_started("store-a")
        assert storage.live_stores_for(partition) == 1  # running, but lacking records 0-4

        partition.on_ack("store-a", 3)
        assert storage.live_stores_for(partition) == 1
        partition.on_ack("store-a", 4)
        assert partition.failed_stores == {}
        assert storage.live_stores_for(partition) == 2


async def test_a_store_that_held_everything_when_its_disk_failed_stays_in_sync(monkeypatch):
    with zmq_context() as context, closing(MeshStorage(context, fast_config())) as storage:
        monkeypatch.setattr(storage, "live_stores", lambda: 1)
        partition = storage.host("orders", "B" * 32, next_sequence=3)
        partition.on_ack("store-a", 2)
        storage.store_exited("store-a", disk_failed=True)
        storage.store_started("store-a")
        assert partition.failed_stores == {}
        assert storage.live_stores_for(partition) == 1
