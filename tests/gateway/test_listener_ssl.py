"""A listener's own static SSL settings (listener.name.NAME.ssl.* in server.properties or the environment),
as Kafka 4.0 takes them: each TLS listener serves its own certificate and asks for client certificates as
its own ssl.client.auth says, checked at start-up and described as static read-only configs."""

from __future__ import annotations

import os
import socket
import ssl

import pytest
from confluent_kafka.admin import AdminClient, ConfigSource
from cryptography import x509

from tests.gateway.certificates import KEY_PASSWORD, _name, authority, issue, server_certificate
from tests.gateway.server import GatewayProcess
from tests.gateway.test_broker_configs import BROKER, DELETE, OK, SET, change, on_the_wire
from tests.gateway.test_certificate_rotation import answers, serial_of
from tests.gateway.test_settings_command import refusal
from tests.mesh.conftest import free_port

TIMEOUT_S = 30.0
STATIC = ConfigSource.STATIC_BROKER_CONFIG


@pytest.fixture(scope="module")
def issued(tmp_path_factory):
    """A CA's certificates: a and b for localhost, a client's."""
    directory = tmp_path_factory.mktemp("listener-ssl")
    ca = authority(directory, "listener-ca")
    client = issue(ca, directory, "client", _name(CN="client-1"), server=False)
    return ca.certificate, server_certificate(ca, directory, "a"), server_certificate(ca, directory, "b"), client


def properties(server: GatewayProcess, ca, a, b) -> str:
    """server.properties of two SSL listeners, A with certificate a, B with b and client certificates required."""
    server.ports = {"A": free_port(), "B": free_port()}
    return "\n".join([
        f"listeners=PLAINTEXT://127.0.0.1:{server.port},A://127.0.0.1:{server.ports['A']},"
        f"B://127.0.0.1:{server.ports['B']}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,A:SSL,B:SSL",
        "ssl.keystore.type=PEM", "ssl.truststore.type=PEM", f"ssl.key.password={KEY_PASSWORD.decode()}",
        f"listener.name.a.ssl.keystore.location={a.keystore}",
        f"listener.name.b.ssl.keystore.location={b.keystore}",
        f"listener.name.b.ssl.truststore.location={ca}",
        "listener.name.b.ssl.client.auth=required", ""])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, issued):
    ca, a, b, _ = issued
    directory = tmp_path_factory.mktemp("listener-ssl-gateway")
    server = GatewayProcess(directory / "gateway")
    config = directory / "server.properties"
    config.write_text(properties(server, ca, a, b))
    server.options = ("--config", str(config))
    server.start()
    yield server
    server.stop()


def connection(server: GatewayProcess, listener: str, ca, client=None) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(str(client.keystore))
    raw = socket.create_connection(("127.0.0.1", server.ports[listener]), timeout=TIMEOUT_S)
    return context.wrap_socket(raw, server_hostname="localhost")


def served_serial(server: GatewayProcess, listener: str, ca) -> int:
    with connection(server, listener, ca) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def served_without_certificate(server: GatewayProcess, listener: str, ca) -> bool:
    try:
        with connection(server, listener, ca) as tls:  # TLS 1.3: a refusal comes with the first read
            return answers(tls)
    except (ssl.SSLError, ConnectionError):
        return False


def test_each_listener_serves_its_own_certificate(gateway, issued):
    ca, a, b, _ = issued
    assert served_serial(gateway, "A", ca) == serial_of(a)
    assert served_serial(gateway, "B", ca) == serial_of(b)

def test_confluent_kafka_checks_each_listeners_certificate(gateway, issued):
    ca, _, _, client = issued
    own = {"ssl.certificate.location": str(client.certificate), "ssl.key.location": str(client.key)}
    for listener, options in (("A", {}), ("B", own)):
        admin = AdminClient({"bootstrap.servers": f"localhost:{gateway.ports[listener]}", "security.protocol": "SSL",
                             "ssl.ca.location": str(ca), **options})
        assert admin.list_topics(timeout=TIMEOUT_S).brokers


def test_client_certificates_are_required_on_one_listener_only(gateway, issued):
    ca, _, _, client = issued
    with connection(gateway, "A", ca) as tls:
        assert answers(tls)
    assert not served_without_certificate(gateway, "B", ca)
    with connection(gateway, "B", ca, client) as tls:
        assert answers(tls)


def test_static_listener_configs_are_described_as_kafka_describes_them(gateway, issued):
    _, a, _, _ = issued
    wire = on_the_wire(gateway, BROKER, "0")
    name = "listener.name.a.ssl.keystore.location"
    assert wire[name] == (str(a.keystore), STATIC, True, [(name, str(a.keystore), STATIC)])
    assert wire["listener.name.b.ssl.client.auth"] == (
        "required", STATIC, True, [("listener.name.b.ssl.client.auth", "required", STATIC),
                                   ("ssl.client.auth", "none", ConfigSource.DEFAULT_CONFIG)])


def test_a_bad_listener_value_ends_start_up_in_one_line(tmp_path, issued):
    ca, a, b, _ = issued
    config = tmp_path / "server.properties"
    config.write_text(properties(GatewayProcess(tmp_path / "gateway"), ca, a, b)
                      + "listener.name.a.ssl.client.auth=always\n")
    assert (f"listener.name.a.ssl.client.auth ({config}:10): 'always' is not allowed"
            in refusal("--config", str(config)))
    line = refusal(env={
        **os.environ, "DAFKA_LISTENER_NAME_SSL_SSL_PROTOCOL": "SSLv3"})
    assert "listener.name.ssl.ssl.protocol (DAFKA_LISTENER_NAME_SSL_SSL_PROTOCOL)" in line


def test_a_dynamic_listener_config_wins_over_the_static_one(gateway, issued):
    ca, a, b, _ = issued
    name = "listener.name.a.ssl.keystore.location"
    assert change(gateway, "0", (name, str(b.keystore), SET)) == OK
    assert served_serial(gateway, "A", ca) == serial_of(b)
    assert served_serial(gateway, "B", ca) == serial_of(b)
    assert on_the_wire(gateway, BROKER, "0")[name] == (
        str(b.keystore), ConfigSource.DYNAMIC_BROKER_CONFIG, True,
        [(name, str(b.keystore), ConfigSource.DYNAMIC_BROKER_CONFIG), (name, str(a.keystore), STATIC)])
    assert change(gateway, "0", (name, None, DELETE)) == OK
    assert served_serial(gateway, "A", ca) == serial_of(a)
