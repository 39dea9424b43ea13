"""SSL listeners beside PLAINTEXT ones: TLS and mutual TLS with the real clients, the principal a
client certificate names, and wrong clients refused at once with one log line saying why."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from gateway.testing.broker_process import API_VERSIONS_V0
from gateway.testing.ports import free_port
from tests.gateway.certificates import CLIENT_SUBJECT, KEY_PASSWORD, make_certificates
from tests.gateway.clients import CLIENTS, TIMEOUT_S, Sent, confluent_produce, same_records
from tests.gateway.server import GatewayProcess
from tests.gateway.test_connection_limits import wait_for
from tests.gateway.test_http_endpoint import get, sample
from tests.gateway.test_startup_failures import failed_start

CLOSE_WITHIN_S = 1.0


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certificates"))


def with_ssl_listener(server: GatewayProcess, *options: str) -> GatewayProcess:
    server.ssl_port = free_port()
    server.options = ("--listeners", f"PLAINTEXT://127.0.0.1:{server.port},SSL://127.0.0.1:{server.ssl_port}",
                      *options)
    return server


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory, certificates):
    """Client certificates requested (optional), files named in the settings."""
    server = with_ssl_listener(
        GatewayProcess(tmp_path_factory.mktemp("tls") / "gateway"),
        "--ssl-keystore-type", "PEM", "--ssl-keystore-location", str(certificates.server.keystore),
        "--ssl-key-password", KEY_PASSWORD.decode(), "--ssl-truststore-type", "PEM",
        "--ssl-truststore-location", str(certificates.ca), "--ssl-client-auth", "requested",
        "--ssl-handshake-timeout-ms", "2000")
    server.start()
    yield server
    server.stop()


def continued(pem: bytes) -> str:
    """A PEM text as one server.properties value over several lines."""
    return " \\\n    ".join(pem.decode().strip().splitlines())


@pytest.fixture(scope="module")
def strict_gateway(tmp_path_factory, certificates):
    """Client certificates required; key, chain and CAs inline in a server.properties file; a mapping rule."""
    directory = tmp_path_factory.mktemp("mtls")
    server = with_ssl_listener(GatewayProcess(directory / "gateway"), "--config", str(directory / "server.properties"))
    properties = {
        "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", "ssl.client.auth": "required",
        "ssl.keystore.key": continued(certificates.server.key.read_bytes()),
        "ssl.keystore.certificate.chain": continued(certificates.server.certificate.read_bytes()),
        "ssl.key.password": KEY_PASSWORD.decode(),
        "ssl.truststore.certificates": continued(certificates.ca.read_bytes()),
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=(apps|ops),.*$/$1@$2/U,DEFAULT",
    }
    (directory / "server.properties").write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    server.start()
    yield server
    server.stop()


def ssl_config(client: str, certificates, *, with_certificate: bool) -> dict:
    """The client's own settings for SSL, trusting the test CA, with the client certificate or not."""
    issued = certificates.client
    if client == "confluent-kafka":
        config = {"security.protocol": "SSL", "ssl.ca.location": str(certificates.ca)}
        if with_certificate:
            config |= {"ssl.certificate.location": str(issued.certificate), "ssl.key.location": str(issued.key)}
        return config
    if client == "aiokafka":
        from aiokafka.helpers import create_ssl_context
        files = {"certfile": str(issued.certificate), "keyfile": str(issued.key)} if with_certificate else {}
        return {"security_protocol": "SSL", "ssl_context": create_ssl_context(cafile=str(certificates.ca), **files)}
    config = {"security_protocol": "SSL", "ssl_cafile": str(certificates.ca), "ssl_check_hostname": True}
    if with_certificate:
        config |= {"ssl_certfile": str(issued.certificate), "ssl_keyfile": str(issued.key)}
    return config


def log_lines(server: GatewayProcess, *words: str, since: int = 0) -> list[str]:
    """The log's lines holding every one of `words`, from byte `since` on."""
    with server.log_path.open("rb") as log:
        log.seek(since)
        text = log.read().decode(errors="replace")
    return [line for line in text.splitlines() if all(word in line for word in words)]


def log_end(server: GatewayProcess) -> int:
    return server.log_path.stat().st_size


def wait_logged(server: GatewayProcess, since: int, *words: str) -> None:
    """Until a line holding every one of `words` is logged after byte `since`."""
    wait_for(lambda: log_lines(server, *words, since=since), f"a log line with {words}")


def opened_as(server: GatewayProcess, principal: str, since: int) -> bool:
    """Whether a connection over SSL opened as `principal` after byte `since` of the log."""
    return bool(log_lines(server, "connection_opened", "security_protocol='SSL'", f"principal='{principal}'",
                          since=since))


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("with_certificate", [False, True], ids=["tls", "mtls"])
def test_each_client_produces_and_consumes_over_ssl(tls_gateway, certificates, client, with_certificate):
    produce, consume = CLIENTS[client]
    since = log_end(tls_gateway)
    topic = f"tls-{client}-{with_certificate}"
    sent = [Sent(b"secret %d" % i, key=b"k") for i in range(20)]
    bootstrap = f"localhost:{tls_gateway.ssl_port}"  # the server certificate's name, checked by the clients
    produce(bootstrap, topic, sent, **ssl_config(client, certificates, with_certificate=with_certificate))
    got = consume(bootstrap, topic, [0], len(sent), **ssl_config(client, certificates,
                                                                  with_certificate=with_certificate))
    assert same_records(sent, got)
    principal = f"User:{CLIENT_SUBJECT}" if with_certificate else "User:ANONYMOUS"
    wait_for(lambda: opened_as(tls_gateway, principal, since), f"a connection opened as {principal}")


def test_the_ssl_listener_advertises_itself_and_plaintext_goes_on_beside_it(tls_gateway, certificates):
    confluent_produce(tls_gateway.bootstrap, "beside-tls", [Sent(b"plain")])
    admin = AdminClient(ssl_config("confluent-kafka", certificates, with_certificate=False)
                        | {"bootstrap.servers": f"127.0.0.1:{tls_gateway.ssl_port}"})
    brokers = admin.list_topics(timeout=TIMEOUT_S).brokers
    assert {(b.host, b.port) for b in brokers.values()} == {("127.0.0.1", tls_gateway.ssl_port)}
    broker = ConfigResource(ResourceType.BROKER, "0")
    configs = admin.describe_configs([broker])[broker].result(TIMEOUT_S)
    password = configs["ssl.key.password"]
    assert password.is_sensitive and password.value is None
    assert configs["ssl.client.auth"].value == "requested" and not configs["ssl.client.auth"].is_sensitive
    assert KEY_PASSWORD.decode() not in tls_gateway.log_path.read_text()


def test_kcat_lists_and_produces_over_ssl(tls_gateway, certificates):
    common = ["kcat", "-b", f"localhost:{tls_gateway.ssl_port}", "-X", "security.protocol=SSL",
              "-X", f"ssl.ca.location={certificates.ca}"]
    subprocess.run([*common, "-P", "-t", "kcat-tls"], input=b"over tls\n", check=True, timeout=TIMEOUT_S)
    out = subprocess.run([*common, "-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-q"], capture_output=True,
                         check=True, timeout=TIMEOUT_S)
    assert out.stdout == b"over tls\n"


def test_a_required_certificate_names_the_principal_through_the_mapping_rules(strict_gateway, certificates):
    produce, consume = CLIENTS["confluent-kafka"]
    since = log_end(strict_gateway)
    bootstrap = f"localhost:{strict_gateway.ssl_port}"
    config = ssl_config("confluent-kafka", certificates, with_certificate=True)
    produce(bootstrap, "mtls", [Sent(b"mutual")], **config)
    assert same_records([Sent(b"mutual")], consume(bootstrap, "mtls", [0], 1, **config))
    wait_for(lambda: opened_as(strict_gateway, "User:CLIENT-1@APPS", since), "a connection opened as CLIENT-1@APPS")


def refused_within(port: int, *, send: bytes = b"", context: ssl.SSLContext | None = None) -> float:
    """Seconds until the gateway closed a connection to `port` that sent `send` or began a TLS
    handshake with `context` (an error or the end of the stream); a timeout if it stayed open
    for CLOSE_WITHIN_S."""
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WITHIN_S) as raw:
        try:
            if context is None:
                raw.sendall(send)
                assert raw.recv(1) == b""
            else:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(API_VERSIONS_V0)  # TLS 1.3: a refused certificate shows on the first read
                    assert tls.recv(1) == b""
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass
    return time.monotonic() - began


def client_context(certificates, issued=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certificates.ca))
    if issued is not None:
        context.load_cert_chain(str(issued.certificate), str(issued.key))
    return context


def test_a_plaintext_client_on_the_ssl_port_is_closed_at_once(tls_gateway):
    since = log_end(tls_gateway)
    assert refused_within(tls_gateway.ssl_port, send=API_VERSIONS_V0) < CLOSE_WITHIN_S
    wait_logged(tls_gateway, since, "tls_handshake_failed", "listener='SSL'", "peer='127.0.0.1:", "does not speak TLS")


def test_a_tls_client_on_the_plaintext_port_is_closed_at_once(tls_gateway, certificates):
    since = log_end(tls_gateway)
    assert refused_within(tls_gateway.port, context=client_context(certificates)) < CLOSE_WITHIN_S
    wait_logged(tls_gateway, since, "wrong_protocol", "listener='PLAINTEXT'", "peer='127.0.0.1:",
                "a TLS handshake on a plaintext listener")


def test_a_certificate_from_an_unknown_ca_is_refused(tls_gateway, certificates):
    since = log_end(tls_gateway)
    stranger = client_context(certificates, certificates.stranger)
    assert refused_within(tls_gateway.ssl_port, context=stranger) < CLOSE_WITHIN_S
    wait_logged(tls_gateway, since, "tls_handshake_failed", "listener='SSL'", "client certificate refused")


def test_no_certificate_where_one_is_required_is_refused(strict_gateway, certificates):
    since = log_end(strict_gateway)
    assert refused_within(strict_gateway.ssl_port, context=client_context(certificates)) < CLOSE_WITHIN_S
    wait_logged(strict_gateway, since, "tls_handshake_failed", "sent no certificate")


def test_a_silent_client_is_closed_after_the_handshake_timeout_without_holding_others(tls_gateway, certificates):
    since = log_end(tls_gateway)
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", tls_gateway.ssl_port)) as silent:
        # Meanwhile another client is served: the handshake waits in the silent connection's own task.
        config = ssl_config("confluent-kafka", certificates, with_certificate=False)
        confluent_produce(f"localhost:{tls_gateway.ssl_port}", "beside-silent", [Sent(b"served")], **config)
        silent.settimeout(TIMEOUT_S)
        assert silent.recv(1) == b""
        assert time.monotonic() - began >= 2.0  # ssl.handshake.timeout.ms
    wait_logged(tls_gateway, since, "tls_handshake_failed", "no TLS handshake within")


def test_a_key_that_cannot_be_read_stops_the_start_with_one_line(tmp_path, certificates):
    server = with_ssl_listener(GatewayProcess(tmp_path / "gateway"), "--ssl-keystore-type", "PEM",
                               "--ssl-keystore-location", str(certificates.server.keystore),
                               "--ssl-key-password", "not the password")
    line = failed_start(server)
    assert "cannot load the private key and certificate chain" in line and "not the password" not in line


@pytest.mark.parametrize("to_ssl_port, event", [(False, "wrong_protocol"), (True, "tls_handshake_failed")],
                         ids=["tls-client-on-plaintext", "plaintext-client-on-ssl"])
def test_a_real_client_on_the_wrong_port_gets_nothing_and_the_gateway_says_why(tls_gateway, certificates,
                                                                              to_ssl_port, event):
    since = log_end(tls_gateway)
    port = tls_gateway.ssl_port if to_ssl_port else tls_gateway.port
    config = {} if to_ssl_port else ssl_config("confluent-kafka", certificates, with_certificate=False)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "client.id": f"wrong-{port}", **config})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    listener = "SSL" if to_ssl_port else "PLAINTEXT"
    wait_logged(tls_gateway, since, f"event='{event}'", f"listener='{listener}'")


def test_a_handshake_under_way_does_not_hold_the_shutdown(tmp_path, certificates):
    http = free_port()
    server = with_ssl_listener(GatewayProcess(tmp_path / "gateway"), "--ssl-keystore-type", "PEM",
                               "--ssl-keystore-location", str(certificates.server.keystore),
                               "--ssl-key-password", KEY_PASSWORD.decode(),
                               "--ssl-handshake-timeout-ms", "600000", "--http-port", str(http))
    server.start()
    with socket.create_connection(("127.0.0.1", server.ssl_port)):
        handshaking = 'dafka_gateway_connections{listener="SSL"}'
        wait_for(lambda: sample(get(http, "/metrics")[1], handshaking) == 1, "the connection accepted")
        began = time.monotonic()
        assert server.stop() == 0
        # Well within the shutdown grace (10 s) that would end it otherwise.
        assert time.monotonic() - began < 5.0, server.log_tail()
