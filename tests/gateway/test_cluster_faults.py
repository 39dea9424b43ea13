"""A gateway paused longer than the mesh's beacon timeout and the cluster's session (SIGSTOP, then
SIGCONT; issue 16): the stores expired it meanwhile and its partitions moved on. Woken, it finds
its stores again, serves again, and no partition stays without a leader that can serve it."""

import signal
import time

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acks import external_mesh
from tests.gateway.test_cluster import (
    PARTITIONS,
    create_topic_through,
    gateway_cluster,
    metadata,
    records,
    spread_over,
)

TOPIC = "woken"
STORE_EXPIRED = "event='peer_expired'"
# Paused on after the store expired it, as a pause of any length would be: the store's connections
# to it are closed by then, and the gateway sees them gone before the store reconnects.
PAUSED_AFTER_EXPIRY_S = 1.0
PEER_APPEARED = "event='peer_appeared'"


def test_a_gateway_paused_past_the_beacon_timeout_finds_its_store_again(tmp_path):
    """The store expires the paused gateway's nodes and drops its connections to them; once the
    gateway beacons again the store reconnects, and the gateway counts it live again: acks=all
    (which needs min.insync.replicas live stores) is served, not refused NOT_ENOUGH_REPLICAS."""
    server = GatewayProcess(tmp_path / "gateway", stores=0)
    with external_mesh(tmp_path, server, stores=1) as (_, (store,)):
        server.start()
        create_topic(server.bootstrap, "woken")
        assert confluent_produce(server.bootstrap, "woken", [Sent(value=b"before")], acks="all") == [0]
        appeared = store.log_text().count(PEER_APPEARED)
        server.process.send_signal(signal.SIGSTOP)
        try:
            store.wait_for_log(STORE_EXPIRED, count=6)  # the store's writer and reader, each of our 3 nodes
            time.sleep(PAUSED_AFTER_EXPIRY_S)
        finally:
            server.process.send_signal(signal.SIGCONT)
        store.wait_for_log(PEER_APPEARED, count=appeared + 6)  # our 3 nodes again, by its writer and reader
        after = [Sent(value=b"after-%d" % n) for n in range(5)]
        assert confluent_produce(server.bootstrap, "woken", after, acks="all",
                                 **{"message.timeout.ms": 10000}) == list(range(1, 6))


def test_a_controller_paused_past_its_session_steps_down_and_serves_again(tmp_path):
    """The controller (node 1) is paused until the others took its key and its partitions and
    the store expired it. Woken, it steps down once, finds the store again, and every partition
    takes acks=all; once the others are killed it becomes the controller again and leads all."""
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        paused, others = gateways[0], gateways[1:]
        store_log = tmp_path / "store-a.log"
        paused.process.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: spread_over(others[0], TOPIC, {2, 3}) and metadata(others[0]).controller_id != 1,
                       30, "another controller moved the paused one's partitions")
            wait_until(lambda: store_log.read_text().count(STORE_EXPIRED) >= 6, 30, "the store expired it")
            time.sleep(PAUSED_AFTER_EXPIRY_S)
        finally:
            paused.process.send_signal(signal.SIGCONT)
        wait_until(lambda: "event='cluster_role_changed'" in paused.log_path.read_text(), 30, "it stepped down")
        bootstrap = ",".join(g.bootstrap for g in gateways)
        assert len(confluent_produce(bootstrap, TOPIC, records("woken", 2 * PARTITIONS), acks="all",
                                     **{"message.timeout.ms": 20000})) == 2 * PARTITIONS
        for other in others:
            other.kill()
        wait_until(lambda: spread_over(paused, TOPIC, {1}), 30, "the woken gateway leads every partition")
        assert len(confluent_produce(paused.bootstrap, TOPIC, records("alone", 2 * PARTITIONS), acks="all",
                                     **{"message.timeout.ms": 20000})) == 2 * PARTITIONS
        assert paused.log_path.read_text().count("event='controller_key_lost'") == 1
