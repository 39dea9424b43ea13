"""Two towers, every node connected to both (issue 16): the loss of either tower costs nothing.

A gateway and stores as processes, min.insync.replicas=2 with two live stores, so that an
acks=all produce is answered only once both stores hold it: a store that takes part was
found through a tower. Each tower in turn is killed (-9); a store started while it is dead
is found through the other one.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acks import start_store
from tests.mesh.conftest import fast_config, on_towers
from tests.mesh.processes import NodeProcess

TOPIC = "towers"
TOWER_STARTED = "event='tower_started'"
PRODUCE = {"message.timeout.ms": 30000}


class Towers:
    """Two tower processes on fixed endpoints, each one killed and started again at will."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.configs = [fast_config(), fast_config()]
        self.processes = [self._start(number) for number in range(2)]

    def _start(self, number: int) -> NodeProcess:
        log = self.directory / f"tower-{number + 1}.log"
        before = log.read_text().count(TOWER_STARTED) if log.exists() else 0  # a restart appends
        tower = NodeProcess.tower(self.configs[number], log)
        tower.wait_for_log(TOWER_STARTED, count=before + 1)
        return tower

    def kill(self, number: int) -> None:
        self.processes[number].stop(signal.SIGKILL)

    def restart(self, number: int) -> None:
        self.processes[number] = self._start(number)

    def stop(self) -> None:
        for tower in self.processes:
            tower.stop()


@contextmanager
def cluster_on_two_towers(tmp_path):
    """Towers, stores a and b, and a gateway, all on both towers; yields (towers, the nodes'
    mesh settings, stores by name, gateway) and stops every process, those the test started too."""
    towers = Towers(tmp_path)
    config = on_towers(towers.configs)
    stores: dict[str, NodeProcess] = {}
    gateway = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "2", "--expected-stores", "2",
                             "--beacon-sub-address", ",".join(config.beacon_sub_address),
                             "--beacon-pub-address", ",".join(config.beacon_pub_address), stores=0)
    try:
        for name in "ab":
            stores[name] = start_store(config, tmp_path, name)
        gateway.start()
        yield towers, config, stores, gateway
    finally:
        gateway.stop()
        for store in stores.values():
            store.stop()
        towers.stop()


def live_stores_seen(gateway: GatewayProcess, live: int) -> int:
    return gateway.log_path.read_text().count(f"event='live_stores_changed' live={live}")


def replace_store(gateway, config, stores, tmp_path, dead: str, new: str) -> None:
    """Kill store `dead`, then start store `new` on a directory of its own; return once the
    gateway counts two live stores again."""
    once = live_stores_seen(gateway, 1)
    stores[dead].stop(signal.SIGKILL)
    wait_until(lambda: live_stores_seen(gateway, 1) > once, 30, f"the gateway saw store {dead} go")
    twice = live_stores_seen(gateway, 2)
    stores[new] = start_store(config, tmp_path, new)
    wait_until(lambda: live_stores_seen(gateway, 2) > twice, 30, f"the gateway found store {new}")


def holds(directory: Path, value: bytes) -> bool:
    """Whether a store's files hold the value (records are stored as produced: uncompressed)."""
    return any(value in path.read_bytes() for path in directory.rglob("*") if path.is_file())


def produced(gateway: GatewayProcess, topic: str, label: str) -> list[Sent]:
    sent = [Sent(value=b"%s-%d" % (label.encode(), n)) for n in range(5)]
    assert len(confluent_produce(gateway.bootstrap, topic, sent, acks="all", **PRODUCE)) == len(sent)
    return sent


def test_clients_and_discovery_outlive_either_tower(tmp_path):
    """Tower 1 killed: produce and consume go on, on a topic made before and one made after,
    and a store started then replaces a killed one. Tower 1 started again and tower 2 killed:
    a store started then is found through tower 1; every record acknowledged is read back."""
    with cluster_on_two_towers(tmp_path) as (towers, config, stores, gateway):
        create_topic(gateway.bootstrap, TOPIC)
        sent = produced(gateway, TOPIC, "two-towers")
        towers.kill(0)
        sent += produced(gateway, TOPIC, "tower-1-dead")
        create_topic(gateway.bootstrap, "made-after")
        later = produced(gateway, "made-after", "made-after")
        assert [got.value for got in confluent_consume(gateway.bootstrap, "made-after", [0], 5)] == [
            record.value for record in later]

        replace_store(gateway, config, stores, tmp_path, "b", "c")
        sent += produced(gateway, TOPIC, "found-through-tower-2")
        assert holds(tmp_path / "store-c", b"found-through-tower-2-4")

        towers.restart(0)
        towers.kill(1)
        replace_store(gateway, config, stores, tmp_path, "a", "d")
        sent += produced(gateway, TOPIC, "found-through-tower-1")
        assert holds(tmp_path / "store-d", b"found-through-tower-1-4")
        got = confluent_consume(gateway.bootstrap, TOPIC, [0], len(sent))
        assert [record.value for record in got] == [record.value for record in sent]
