"""SASL over TLS: a SASL_SSL listener beside PLAINTEXT, each real client authenticating with PLAIN and
SCRAM through the TLS stream, the principal the one SASL names."""

from __future__ import annotations

import pytest

from gateway.testing.ports import free_port
from tests.gateway.certificates import KEY_PASSWORD
from tests.gateway.clients import CLIENTS, Sent, same_records
from tests.gateway.sasl_setup import ENABLED, JAAS, SCRAM_USERS, client_config, create_scram_users, credentials
from tests.gateway.server import GatewayProcess
from tests.gateway.test_connection_limits import wait_for
from tests.gateway.test_tls import certificates, log_lines, ssl_config  # noqa: F401  (the fixture `certificates`)


@pytest.fixture(scope="module")
def sasl_ssl_gateway(tmp_path_factory, certificates):  # noqa: F811
    server = GatewayProcess(tmp_path_factory.mktemp("sasl-ssl") / "gateway")
    server.sasl_ssl_port = free_port()
    server.options = (
        "--listeners", f"PLAINTEXT://127.0.0.1:{server.port},SASL_SSL://127.0.0.1:{server.sasl_ssl_port}",
        "--sasl-enabled-mechanisms", ENABLED, "--sasl-jaas-config", JAAS,
        "--ssl-keystore-type", "PEM", "--ssl-keystore-location", str(certificates.server.keystore),
        "--ssl-key-password", KEY_PASSWORD.decode(), "--ssl-truststore-type", "PEM",
        "--ssl-truststore-location", str(certificates.ca))
    server.start()
    create_scram_users(server, SCRAM_USERS)
    yield server
    server.stop()


def sasl_ssl_config(client: str, certificates, mechanism: str) -> dict:  # noqa: F811
    """The client's SSL settings (trusting the test CA) and SASL credentials, over SASL_SSL."""
    protocol = "security.protocol" if client == "confluent-kafka" else "security_protocol"
    return {**ssl_config(client, certificates, with_certificate=False),
            **client_config(client, mechanism, *credentials(mechanism)), protocol: "SASL_SSL"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_client_authenticates_over_tls(sasl_ssl_gateway, certificates, client, mechanism):  # noqa: F811
    config = sasl_ssl_config(client, certificates, mechanism)
    produce, consume = CLIENTS[client]
    topic = f"sasl-ssl-{client}-{mechanism}".lower()
    sent = [Sent(b"sealed-%d" % n, key=b"k", partition=0) for n in range(3)]
    bootstrap = f"localhost:{sasl_ssl_gateway.sasl_ssl_port}"  # the server certificate's name
    assert produce(bootstrap, topic, sent, **config) == [0, 1, 2]
    assert same_records(sent, consume(bootstrap, topic, [0], len(sent), **config))
    user = credentials(mechanism)[0]
    wait_for(lambda: log_lines(sasl_ssl_gateway, "event='authenticated'", f"principal='User:{user}'",
                               f"mechanism='{mechanism}'", "SASL_SSL"),
             f"User:{user} authenticated on the SASL_SSL listener")
