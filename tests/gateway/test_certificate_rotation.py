"""Certificate rotation without a restart (KIP-226): a TLS listener's keystore changed through its
listener.name.ssl.ssl.* dynamic configs with unmodified admin clients serves new connections while open
ones go on, checked, described and kept across a restart as Kafka 4.0 does."""

from __future__ import annotations

import shutil
import socket
import ssl
from contextlib import contextmanager

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigSource, ResourceType
from cryptography import x509

from gateway.testing.broker_process import API_VERSIONS_V0
from tests.gateway.certificates import KEY_PASSWORD, authority, server_certificate
from tests.gateway.server import GatewayProcess
from tests.gateway.test_broker_configs import INVALID_REQUEST, OK, SET, change, confluent_change, described, on_the_wire
from tests.gateway.test_tls import log_end, log_lines, wait_logged, with_ssl_listener

TIMEOUT_S = 30.0
KEYSTORE = "listener.name.ssl.ssl.keystore.location"
KEY_PASSWORD_CONFIG = "listener.name.ssl.ssl.key.password"
BROKER = 4
DYNAMIC, STATIC = ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.STATIC_BROKER_CONFIG


@pytest.fixture(scope="module")
def issued(tmp_path_factory):
    """Certificates of one CA: a, b and c for localhost (c's file is rewritten by a test), and one of
    another distinguished name."""
    directory = tmp_path_factory.mktemp("rotation")
    ca = authority(directory, "rotation-ca")
    certificates = {name: server_certificate(ca, directory, name) for name in ("a", "b", "c")}
    certificates["elsewhere"] = server_certificate(ca, directory, "elsewhere", common_name="elsewhere")
    return ca.certificate, certificates


@pytest.fixture
def gateway(tmp_path, issued):
    ca, certificates = issued
    server = with_ssl_listener(
        GatewayProcess(tmp_path / "gateway"), "--ssl-keystore-type", "PEM",
        "--ssl-keystore-location", str(certificates["a"].keystore), "--ssl-key-password", KEY_PASSWORD.decode())
    server.start()
    yield server
    server.stop()


def serial_of(issued) -> int:
    return x509.load_pem_x509_certificate(issued.certificate.read_bytes()).serial_number


@contextmanager
def tls_connection(server: GatewayProcess, ca):
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", server.ssl_port), timeout=TIMEOUT_S) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            yield tls


def served_serial(server: GatewayProcess, ca) -> int:
    """The serial number of the certificate a new TLS connection is served."""
    with tls_connection(server, ca) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def answers(tls: ssl.SSLSocket) -> bool:
    """Whether the gateway answers ApiVersions on this connection."""
    tls.sendall(API_VERSIONS_V0)
    return len(tls.recv(4)) == 4


def ssl_admin(server: GatewayProcess, ca) -> AdminClient:
    return AdminClient({"bootstrap.servers": f"localhost:{server.ssl_port}", "security.protocol": "SSL",
                        "ssl.ca.location": str(ca)})


def rotate(admin: AdminClient, keystore) -> None:
    """kafka-configs.sh --entity-type brokers --entity-name 0 --alter --add-config, through confluent-kafka."""
    confluent_change(admin, (KEYSTORE, str(keystore), SET), (KEY_PASSWORD_CONFIG, KEY_PASSWORD.decode(), SET))


def test_a_new_certificate_serves_new_connections_while_open_ones_go_on(gateway, issued):
    ca, certificates = issued
    assert served_serial(gateway, ca) == serial_of(certificates["a"])
    admin = ssl_admin(gateway, ca)  # over the listener whose certificate changes
    with tls_connection(gateway, ca) as before:
        since = log_end(gateway)
        rotate(admin, certificates["b"].keystore)
        assert served_serial(gateway, ca) == serial_of(certificates["b"])
        assert answers(before)  # still on certificate a
    wait_logged(gateway, since, "ssl_reconfigured", "listener='SSL'")
    assert not log_lines(gateway, KEY_PASSWORD.decode())  # a password is never logged
    wire = on_the_wire(gateway, BROKER, "0")
    new, old = str(certificates["b"].keystore), str(certificates["a"].keystore)
    assert wire[KEYSTORE] == (new, DYNAMIC, True, [(KEYSTORE, new, DYNAMIC), ("ssl.keystore.location", old, STATIC)])
    assert wire[KEY_PASSWORD_CONFIG] == (None, DYNAMIC, True, [(KEY_PASSWORD_CONFIG, None, DYNAMIC),
                                                                    ("ssl.key.password", None, STATIC)])
    assert described(admin, ResourceType.BROKER, "0")[KEY_PASSWORD_CONFIG].is_sensitive


def test_a_certificate_of_another_name_is_refused_as_kafka_refuses_it(gateway, issued):
    ca, certificates = issued
    since = log_end(gateway)
    assert change(gateway, "0", (KEYSTORE, str(certificates["elsewhere"].keystore), SET)) == (
        INVALID_REQUEST, "Invalid dynamic configuration")
    wait_logged(gateway, since, "ssl_reconfiguration_refused", "Keystore DistinguishedName does not match")
    with pytest.raises(KafkaException, match="Invalid dynamic configuration"):
        rotate(ssl_admin(gateway, ca), certificates["elsewhere"].keystore)
    assert change(gateway, "0", (KEYSTORE, "/no/such/keystore.pem", SET))[1] == "Invalid dynamic configuration"
    assert change(gateway, "", (KEYSTORE, str(certificates["b"].keystore), SET)) == (INVALID_REQUEST, (
        f"Cannot update these configs at default cluster level, broker id must be specified: Set({KEYSTORE})"))
    assert change(gateway, "0", ("listener.name.ssl.ssl.client.auth", "always", SET)) == (INVALID_REQUEST, (
        "Invalid value always for configuration ssl.client.auth: String must be one of: required, requested, none"))
    assert served_serial(gateway, ca) == serial_of(certificates["a"])


def test_the_same_path_with_new_content_is_reloaded_and_a_restart_keeps_it(gateway, issued):
    ca, certificates = issued
    keystore = certificates["c"].keystore
    own = keystore.read_bytes()
    shutil.copyfile(certificates["b"].keystore, keystore)
    assert change(gateway, "0", (KEYSTORE, str(keystore), SET)) == OK
    assert served_serial(gateway, ca) == serial_of(certificates["b"])
    keystore.write_bytes(own)
    assert change(gateway, "0", (KEYSTORE, str(keystore), SET)) == OK  # as Kafka, reloaded when changed on disk
    assert served_serial(gateway, ca) == serial_of(certificates["c"])
    gateway.stop()
    gateway.start()
    assert served_serial(gateway, ca) == serial_of(certificates["c"])
