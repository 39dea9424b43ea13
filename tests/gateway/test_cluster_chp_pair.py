"""Three gateways on a CHP pair (issue 16): the CHP primary's kill -9 moves every gateway to the
backup while clients carry on, and the cluster still moves a killed gateway's partitions. The
CHP servers and the gateways' session run at their defaults, as in compose.yaml."""

import pytest

from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import (
    ChpServers,
    create_topic_through,
    gateway_cluster,
    leadership_history,
    metadata,
    spread_over,
)
from tests.gateway.traffic import Traffic

TOPIC = "paired"
SESSION_TIMEOUT_MS = 6000  # chp.session.timeout.ms's default
BETWEEN_FAULTS = 500  # records produced and read after each fault


def synced_with(gateway, port: int) -> bool:
    """Whether the gateway's CHP client took a snapshot of the server on `port` (its log says so)."""
    return any("event='chp.synced'" in line and f"'127.0.0.1', {port})" in line
               for line in gateway.log_path.read_text(errors="replace").splitlines())


@pytest.mark.parametrize("during", [False, True], ids=["after_failover", "during_failover"])
def test_kill_of_the_chp_primary_then_of_a_gateway(tmp_path, during):
    """The gateway is killed once every gateway follows the backup, or at once: while the
    gateways still wait for the dead primary's heartbeats."""
    pair = ChpServers(tmp_path, ("primary", "backup"))
    with gateway_cluster(tmp_path, chp=pair, session_timeout_ms=SESSION_TIMEOUT_MS) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        with Traffic(",".join(g.bootstrap for g in gateways), TOPIC) as traffic:
            traffic.carries_on(BETWEEN_FAULTS, 60, "before the faults")
            pair.kill(0)
            if during:
                gateways[2].kill()
            for gateway in gateways[:2] if during else gateways:
                wait_until(lambda g=gateway: synced_with(g, pair.ports[1]), 30, "every gateway follows the backup")
            traffic.carries_on(BETWEEN_FAULTS, 60, "on the CHP backup")
            if not during:
                gateways[2].kill()
            for survivor in gateways[:2]:
                wait_until(lambda g=survivor: spread_over(g, TOPIC, {1, 2}), 30,
                           f"gateway 3's partitions moved\n{leadership_history(gateways, TOPIC)}")
                assert set(metadata(survivor).brokers) == {1, 2}
            traffic.carries_on(BETWEEN_FAULTS, 60, "after the gateway's kill")
            traffic.read_back(60)
        errors = traffic.errors()
        assert not errors, f"{errors}\n{leadership_history(gateways, TOPIC)}"
