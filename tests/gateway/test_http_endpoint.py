"""/metrics, /health and /ready of a gateway and of the mesh nodes, over HTTP."""

import urllib.error
import urllib.request

import pytest

from tests.gateway.clients import Sent, confluent_consume, kafka_python_produce
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.mesh.conftest import fast_config, free_port
from tests.mesh.processes import NodeProcess, config_arguments

TIMEOUT_S = 10.0


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=TIMEOUT_S) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sample(metrics: str, name: str) -> float:
    """The value of one sample of the Prometheus text, by its name and labels."""
    return next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(name + " "))


@pytest.fixture
def observed_gateway(tmp_path):
    http = free_port()
    server = GatewayProcess(tmp_path / "gateway", "--http-port", str(http)).start()
    yield server, http
    server.stop()


def test_a_gateway_reports_health_readiness_and_metrics(observed_gateway):
    server, http = observed_gateway
    assert get(http, "/health") == (200, "alive\n")
    wait_until(lambda: get(http, "/ready")[0] == 200, TIMEOUT_S, "ready once listening")
    records = [Sent(b"x" * 100) for _ in range(50)]
    kafka_python_produce(server.bootstrap, "observed", records, acks="all")
    assert len(confluent_consume(server.bootstrap, "observed", [0], len(records), **{"group.id": "readers"})) == 50
    metrics = get(http, "/metrics")[1]
    assert sample(metrics, 'dafka_gateway_records_in_total{topic="observed"}') == 50
    assert sample(metrics, 'dafka_gateway_records_out_total{topic="observed"}') >= 50
    assert sample(metrics, 'dafka_gateway_bytes_in_total{topic="observed"}') > 50 * 100
    assert sample(metrics, 'dafka_gateway_request_seconds_count{api="Produce"}') >= 1
    assert sample(metrics, 'dafka_gateway_partitions{kind="gateway"}') == 1
    assert sample(metrics, "dafka_gateway_live_stores") == 1
    assert sample(metrics, "dafka_gateway_partitions_under_min_insync") == 0
    assert sample(metrics, 'dafka_gateway_journal_entries{journal="metadata"}') >= 1
    assert get(http, "/nothing")[0] == 404


def test_a_store_in_the_gateways_process_reports_on_the_gateways_metrics(tmp_path):
    http = free_port()
    server = GatewayProcess(tmp_path / "gateway", "--http-port", str(http), "--embedded-stores-in-process",
                            "true").start()
    try:
        kafka_python_produce(server.bootstrap, "observed", [Sent(b"x" * 100) for _ in range(5)], acks="all")
        metrics = get(http, "/metrics")[1]
        assert sample(metrics, "dafka_store_records_written_total") >= 2  # the batch, and journal entries
        assert sample(metrics, "dafka_gateway_live_stores") == 1
    finally:
        server.stop()


def test_a_gateway_is_not_ready_once_it_stops(observed_gateway):
    server, http = observed_gateway
    wait_until(lambda: get(http, "/ready")[0] == 200, TIMEOUT_S, "ready once listening")
    assert server.stop() == 0
    with pytest.raises(urllib.error.URLError):
        get(http, "/health")


def test_a_store_and_a_tower_report_health_readiness_and_metrics(tmp_path):
    config = fast_config()
    tower_http, store_http = free_port(), free_port()
    tower = NodeProcess("gateway.mesh.tower", [f"--tower-sub-address={config.tower_sub_address}",
                                               f"--tower-pub-address={config.tower_pub_address}",
                                               f"--http-port={tower_http}"], tmp_path / "tower.log")
    store = NodeProcess("gateway.mesh.store", [*config_arguments(config), f"--store-db={tmp_path / 'store'}",
                                               f"--http-port={store_http}"], tmp_path / "store.log")
    try:
        for port in (tower_http, store_http):
            wait_until(lambda port=port: _answers(port), TIMEOUT_S, "the HTTP endpoint")
            wait_until(lambda port=port: get(port, "/ready")[0] == 200, TIMEOUT_S, "ready")
        metrics = get(store_http, "/metrics")[1]
        assert "dafka_store_fsync_seconds_bucket" in metrics
        assert sample(metrics, "dafka_store_records_written_total") == 0
    finally:
        store.stop()
        tower.stop()


def _answers(port: int) -> bool:
    try:
        return get(port, "/health")[0] == 200
    except urllib.error.URLError:
        return False
