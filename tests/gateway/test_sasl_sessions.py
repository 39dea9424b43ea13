"""Sessions end at connections.max.reauth.ms or with their OAUTHBEARER token; clients re-authenticate
on their connection (KIP-368)."""

from __future__ import annotations

import time

import pytest

from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import TIMEOUT_S
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import (
    PLAIN_USERS,
    authenticate_plain,
    client_config,
    log_lines,
    sasl_gateway,
    secured_gateway,  # noqa: F401  (the fixture `secured`)
    unsecured_jwt,
    wait_for,
    wait_until_closed,
)


def test_an_oauthbearer_session_ends_with_its_token(secured):
    connection = RawConnection(secured.sasl_port)
    assert connection.handshake("OAUTHBEARER").error_code == ErrorCode.NONE
    started = time.monotonic()
    token = unsecured_jwt("dora", lifetime_s=2)  # exp in whole seconds: between 1 and 2 s from now
    answer = connection.authenticate(f"n,,\x01auth=Bearer {token}\x01\x01".encode())
    assert answer.error_code == ErrorCode.NONE and 0 < answer.session_lifetime_ms <= 2000
    wait_until_closed(connection, started, answer.session_lifetime_ms / 1000)


def test_a_session_ends_at_connections_max_reauth_ms_unless_renewed(tmp_path):
    lifetime_ms = 1000
    server = sasl_gateway(tmp_path / "gateway", "--connections-max-reauth-ms", str(lifetime_ms))
    try:
        connection = RawConnection(server.sasl_port)
        authenticated = time.monotonic()  # before the gateway starts the session: its end is later than this
        answer = authenticate_plain(connection, "alice", PLAIN_USERS["alice"])
        assert answer.error_code == ErrorCode.NONE and answer.session_lifetime_ms == lifetime_ms
        wait_until_closed(connection, authenticated, lifetime_ms / 1000)
        wait_for(lambda: log_lines(server, "event='authentication_failed'", "principal='User:alice'",
                                   "reason='session expired without re-authentication'"), "the expiry's log line")

        renewed = RawConnection(server.sasl_port)
        authenticate_plain(renewed, "alice", PLAIN_USERS["alice"])
        answer = authenticate_plain(renewed, "alice", PLAIN_USERS["alice"])  # re-authentication
        assert answer.error_code == ErrorCode.NONE and answer.session_lifetime_ms == lifetime_ms
        changed = authenticate_plain(renewed, "admin", PLAIN_USERS["admin"])
        assert changed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "Cannot change principals during re-authentication" in changed.error_message
    finally:
        server.stop()


def producer_of(client: str, bootstrap: str, config: dict):
    """A function that produces one record with one long-lived producer of `client`, and its closing."""
    if client == "confluent-kafka":
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": bootstrap, **config})

        def produce() -> None:
            producer.produce("reauth", b"x")
            assert producer.flush(TIMEOUT_S) == 0
        return produce, lambda: producer.flush(TIMEOUT_S)
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, **config)
    return lambda: producer.send("reauth", b"x").get(TIMEOUT_S), lambda: producer.close(TIMEOUT_S)


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_clients_re_authenticate_and_keep_their_connection(tmp_path, client):
    server = sasl_gateway(tmp_path / "gateway", "--connections-max-reauth-ms", "1500")
    produce, close = producer_of(client, f"127.0.0.1:{server.sasl_port}",
                                 client_config(client, "PLAIN", "alice", PLAIN_USERS["alice"]))
    try:
        def re_authenticated() -> bool:
            peers = [line.split("peer='")[1].split("'")[0] for line in log_lines(server, "event='authenticated'")]
            return any(peers.count(peer) >= 2 for peer in peers)

        deadline = time.monotonic() + TIMEOUT_S
        while not re_authenticated():  # producing all the while: a client may re-authenticate when it sends
            assert time.monotonic() < deadline, "no connection authenticated twice"
            produce()
            time.sleep(0.05)
        produce()
        assert not log_lines(server, "session expired")
    finally:
        close()
        server.stop()
