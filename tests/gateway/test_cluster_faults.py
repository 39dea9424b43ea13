"""A gateway paused longer than the mesh's beacon timeout and the cluster's session (SIGSTOP, then
SIGCONT; issue 16): the stores expired it meanwhile and its partitions moved on. Woken, it finds
its stores again, serves again, and no partition stays without a leader that can serve it."""

import signal
import time

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_produce
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acks import external_mesh

STORE_EXPIRED = "event='peer_expired'"
# Paused on after the store expired it, as a pause of any length would be: the store's connections
# to it are closed by then, and the gateway sees them gone before the store reconnects.
PAUSED_AFTER_EXPIRY_S = 1.0


def test_a_gateway_paused_past_the_beacon_timeout_finds_its_store_again(tmp_path):
    """The store expires the paused gateway's nodes and drops its connections to them; once the
    gateway beacons again the store reconnects, and the gateway counts it live again: acks=all
    (which needs min.insync.replicas live stores) is served, not refused NOT_ENOUGH_REPLICAS."""
    server = GatewayProcess(tmp_path / "gateway", stores=0)
    with external_mesh(tmp_path, server, stores=1) as (_, (store,)):
        server.start()
        create_topic(server.bootstrap, "woken")
        assert confluent_produce(server.bootstrap, "woken", [Sent(value=b"before")], acks="all") == [0]
        server.process.send_signal(signal.SIGSTOP)
        try:
            store.wait_for_log(STORE_EXPIRED, count=6)  # the store's writer and reader, each of our 3 nodes
            time.sleep(PAUSED_AFTER_EXPIRY_S)
        finally:
            server.process.send_signal(signal.SIGCONT)
        # its writer and reader saw each other and our 3 nodes at start, then ours again
        store.wait_for_log("event='peer_appeared'", count=2 + 6 + 6)
        after = [Sent(value=b"after-%d" % n) for n in range(5)]
        assert confluent_produce(server.bootstrap, "woken", after, acks="all",
                                 **{"message.timeout.ms": 10000}) == list(range(1, 6))
