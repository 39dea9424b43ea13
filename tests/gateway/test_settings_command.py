"""dafka-gateway's settings through the real command: refusals, --config, several listeners."""

import os
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from tests.gateway.clients import Sent, confluent_consume, confluent_produce, kafka_python_produce
from tests.gateway.server import GatewayProcess
from tests.mesh.conftest import free_port

TIMEOUT_S = 30.0


def refusal(*argv: str, env: dict | None = None) -> str:
    """The one line `dafka-gateway` prints before exiting with code 2."""
    done = subprocess.run([sys.executable, "-m", "gateway", *argv], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_an_out_of_range_port_is_refused_in_one_line():
    assert "port (--port): 99999 is not allowed; allowed: an integer from 0 to 65535" in refusal("--port", "99999")


def test_zero_partitions_is_refused_in_one_line():
    assert "num.partitions (--num-partitions): 0 is not allowed" in refusal("--num-partitions", "0")


def test_a_bad_value_in_server_properties_is_refused_with_its_line(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("broker.id=0\nlog.retention.hours=168\nmin.insync.replicas=none\n")
    assert f"min.insync.replicas ({config}:3): 'none' is not an integer" in refusal("--config", str(config))


def test_a_bad_environment_variable_is_refused_in_one_line():
    line = refusal(env={**os.environ, "DAFKA_MAX_CONNECTIONS": "-5"})
    assert "max.connections (DAFKA_MAX_CONNECTIONS): -5 is not allowed" in line


def test_a_wildcard_listener_is_never_advertised():
    assert "nonroutable meta-address 0.0.0.0" in refusal("--host-name", "0.0.0.0")


def test_server_properties_sets_what_auto_created_topics_get(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("# from a Kafka broker\nnum.partitions=3\nzookeeper.connect=localhost:2181\n"
                      "log.retention.hours=72\n")
    server = GatewayProcess(tmp_path / "gateway", "--config", str(config)).start()
    try:
        kafka_python_produce(server.bootstrap, "from-properties", [Sent(b"x", partition=2)])
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        topics = admin.list_topics("from-properties", timeout=TIMEOUT_S).topics
        assert len(topics["from-properties"].partitions) == 3
        broker = ConfigResource(ResourceType.BROKER, "0")
        configs = admin.describe_configs([broker])[broker].result(TIMEOUT_S)
        assert (configs["num.partitions"].value, configs["num.partitions"].source) == \
            ("3", ConfigSource.STATIC_BROKER_CONFIG.value)
        assert configs["min.insync.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
        topic = ConfigResource(ResourceType.TOPIC, "from-properties")
        retention = admin.describe_configs([topic])[topic].result(TIMEOUT_S)["retention.ms"]
        assert retention.value == str(72 * 3600 * 1000)
        assert "settings that do not apply here, ignored: zookeeper.connect" in server.log_tail(200)
    finally:
        assert server.stop() == 0


@pytest.fixture
def two_listeners(tmp_path):
    """A gateway with a listener for "outside" clients and one advertised by another name."""
    outside, inside = free_port(), free_port()
    server = GatewayProcess(
        tmp_path / "gateway",
        "--listeners", f"OUTSIDE://127.0.0.1:{outside},INSIDE://127.0.0.1:{inside}",
        "--listener-security-protocol-map", "OUTSIDE:PLAINTEXT,INSIDE:PLAINTEXT",
        "--advertised-listeners", f"INSIDE://localhost:{inside}")
    server.port = outside
    server.start()
    yield server, outside, inside
    server.stop()


def test_each_listener_advertises_its_own_endpoint(two_listeners):
    server, outside, inside = two_listeners
    for port, host in ((outside, "127.0.0.1"), (inside, "localhost")):
        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=TIMEOUT_S)
        assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [(0, host, port)]
    records = [Sent(b"through %d" % n) for n in range(5)]
    confluent_produce(f"localhost:{inside}", "both-ways", records)
    got = confluent_consume(f"127.0.0.1:{outside}", "both-ways", [0], len(records))
    assert [g.value for g in got] == [r.value for r in records]
