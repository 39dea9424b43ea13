"""Wrong clients on a SASL listener are answered or closed at once, each failure logged and counted, no
password ever logged."""

from __future__ import annotations

import time
import urllib.request

from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.clients import TIMEOUT_S, Sent, confluent_produce
from tests.gateway.sasl_connection import API_VERSIONS, RawConnection
from tests.gateway.sasl_setup import (
    ENABLED,
    PLAIN_USERS,
    SCRAM_USERS,
    WRONG_PASSWORD,
    authenticate_plain,
    client_config,
    log_lines,
    secured_gateway,  # noqa: F401  (the fixture `secured`)
    wait_for,
)
from tests.protocol.sasl.scram_client import ScramClient


def test_a_bad_password_fails_after_the_delay_and_closes_the_connection(secured):
    connection = RawConnection(secured.sasl_port)
    started = time.monotonic()
    answer = authenticate_plain(connection, "alice", WRONG_PASSWORD)
    took = time.monotonic() - started
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert 0.1 <= took < 1.0 and connection.closed()
    wait_for(lambda: log_lines(secured, "event='authentication_failed'", "principal='User:alice'",
                               f"peer='127.0.0.1:{connection.sock.getsockname()[1]}'", "mechanism='PLAIN'",
                               "reason='invalid username or password'"), "the failure's log line")


def test_a_bad_scram_password_fails_with_kafkas_message(secured):
    user, _ = SCRAM_USERS["SCRAM-SHA-512"]
    connection = RawConnection(secured.sasl_port)
    assert connection.handshake("SCRAM-SHA-512").error_code == ErrorCode.NONE
    client = ScramClient(SCRAM["SCRAM-SHA-512"], user, WRONG_PASSWORD, "client-nonce")
    final = client.final(connection.authenticate(client.first()).auth_bytes)
    answer = connection.authenticate(final)
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                    "SASL mechanism SCRAM-SHA-512")
    assert connection.closed()


def test_real_clients_with_a_bad_password_are_told_authentication_failed(secured):
    errors = []
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{secured.sasl_port}", "error_cb": errors.append,
                         **client_config("confluent-kafka", "SCRAM-SHA-256", "sam", WRONG_PASSWORD)})
    deadline = time.monotonic() + TIMEOUT_S
    while not [error for error in errors if "Authentication failed" in error.str()]:
        assert time.monotonic() < deadline, f"errors: {errors}"
        producer.poll(0.1)


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_after_the_delay_and_closed(secured):
    connection = RawConnection(secured.sasl_port)
    started = time.monotonic()
    answer = connection.handshake("GSSAPI")
    assert 0.1 <= time.monotonic() - started < 1.0
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ENABLED.split(",")
    assert connection.closed()
    wait_for(lambda: log_lines(secured, "event='authentication_failed'", "mechanism='GSSAPI'",
                               "reason='unsupported mechanism"), "the failure's log line")


def test_a_plaintext_client_on_the_sasl_port_is_closed_at_once(secured):
    connection = RawConnection(secured.sasl_port)
    assert connection.call(API_VERSIONS, 0, API_VERSIONS.Request()).error_code == ErrorCode.NONE
    started = time.monotonic()
    assert connection.metadata() is None  # closed, unanswered, as Kafka closes it
    assert time.monotonic() - started < 1.0
    wait_for(lambda: log_lines(secured, "event='authentication_failed'", "reason='METADATA request before "
                                                                         "authentication'"), "the log line")


def test_only_sasl_authenticate_follows_a_handshake(secured):
    connection = RawConnection(secured.sasl_port)
    assert connection.handshake("PLAIN").error_code == ErrorCode.NONE
    assert connection.metadata() is None


def test_the_v0_handshake_is_followed_by_bare_tokens(secured):
    connection = RawConnection(secured.sasl_port)
    assert connection.handshake("PLAIN", version=0).error_code == ErrorCode.NONE
    connection.send_frame(b"\0alice\0alice-secret")
    assert connection.receive_frame() == b""
    assert connection.metadata().brokers[0].port == secured.sasl_port
    refused = RawConnection(secured.sasl_port)
    refused.handshake("PLAIN", version=0)
    refused.send_frame(b"\0alice\0" + WRONG_PASSWORD.encode())
    assert refused.receive_frame() is None


def test_sasl_requests_on_a_plaintext_listener_are_illegal_but_keep_the_connection(secured):
    connection = RawConnection(secured.port)
    assert connection.handshake("PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert connection.authenticate(b"\0alice\0alice-secret").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert connection.metadata().brokers[0].port == secured.port


def test_no_password_is_ever_logged(secured):
    for password in (PLAIN_USERS["alice"], WRONG_PASSWORD):
        authenticate_plain(RawConnection(secured.sasl_port), "alice", password)
    for mechanism, (user, password) in SCRAM_USERS.items():
        confluent_produce(f"127.0.0.1:{secured.sasl_port}", "sasl-logged", [Sent(b"x")],
                          **client_config("confluent-kafka", mechanism, user, password))
    wait_for(lambda: len(log_lines(secured, "event='authentication_failed'", "principal='User:alice'")) >= 2,
             "failures logged")
    secrets = [*PLAIN_USERS.values(), WRONG_PASSWORD, *(password for _, password in SCRAM_USERS.values())]
    log = secured.log_path.read_text()
    assert not [secret for secret in secrets if secret in log]


def test_authentications_are_counted_by_mechanism_and_result(secured):
    authenticate_plain(RawConnection(secured.sasl_port), "alice", PLAIN_USERS["alice"])
    authenticate_plain(RawConnection(secured.sasl_port), "alice", WRONG_PASSWORD)
    RawConnection(secured.sasl_port).handshake("MADE-UP")

    def counted() -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{secured.http_port}/metrics", timeout=TIMEOUT_S) as page:
            lines = page.read().decode().splitlines()
        return {line.split("{")[1].split("}")[0]: float(line.split()[-1]) for line in lines
                if line.startswith("dafka_gateway_authentications_total{")}

    def labels(mechanism: str, result: str) -> str:
        return f'listener="SASL_PLAINTEXT",mechanism="{mechanism}",result="{result}"'

    wait_for(lambda: counted().get(labels("other", "failed"), 0) >= 1, "the unknown mechanism counted")
    found = counted()
    assert found[labels("PLAIN", "authenticated")] >= 1 and found[labels("PLAIN", "failed")] >= 1
    assert not [key for key in found if "MADE-UP" in key]
