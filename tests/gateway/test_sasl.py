"""SASL on a SASL_PLAINTEXT listener beside a PLAINTEXT one, with the real clients: PLAIN users
from sasl.jaas.config, SCRAM credentials created with AlterUserScramCredentials, unsecured
OAUTHBEARER tokens; and the wrong clients, answered or closed at once."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from gateway.testing.ports import free_port
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.clients import CLIENTS, TIMEOUT_S, Sent, confluent_produce, same_records
from tests.gateway.sasl_connection import API_VERSIONS, RawConnection
from tests.gateway.server import GatewayProcess
from tests.gateway.test_kcat_and_old_clients import needs_kcat, run_kcat
from tests.protocol.sasl.scram_client import ScramClient

PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
        "password=\"admin-secret\" " + " ".join(f'user_{u}="{p}"' for u, p in PLAIN_USERS.items()) + ";")
SCRAM_USERS = {"SCRAM-SHA-256": ("sam", "sam-secret-256"), "SCRAM-SHA-512": ("sue", "sue-secret-512")}
WRONG_PASSWORD = "not-the-password-4711"
ENABLED = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
MECHANISM_TYPES = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


def sasl_gateway(data_dir: Path, *options: str) -> GatewayProcess:
    """A gateway with a PLAINTEXT listener (its `port`) and a SASL_PLAINTEXT one (`sasl_port`)."""
    server = GatewayProcess(data_dir)
    server.sasl_port = free_port()
    server.options = ("--listeners", f"PLAINTEXT://127.0.0.1:{server.port},SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}",
                      "--sasl-enabled-mechanisms", ENABLED, "--sasl-jaas-config", JAAS, *options)
    return server.start()


def create_scram_users(server: GatewayProcess, users: dict[str, tuple[str, str]], iterations: int = 4096) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    upsertions = [UserScramCredentialUpsertion(user, ScramCredentialInfo(MECHANISM_TYPES[mechanism], iterations),
                                               password.encode())
                  for mechanism, (user, password) in users.items()]
    for future in admin.alter_user_scram_credentials(upsertions).values():
        future.result(TIMEOUT_S)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    http_port = free_port()
    server = sasl_gateway(tmp_path_factory.mktemp("sasl") / "gateway", "--http-port", str(http_port))
    server.http_port = http_port
    create_scram_users(server, SCRAM_USERS)
    yield server
    server.stop()


def credentials(mechanism: str) -> tuple[str, str]:
    return ("alice", PLAIN_USERS["alice"]) if mechanism == "PLAIN" else SCRAM_USERS[mechanism]


def client_config(client: str, mechanism: str, user: str, password: str) -> dict:
    if client == "confluent-kafka":
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
                "sasl.password": password}
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "sasl_plain_username": user,
            "sasl_plain_password": password}


def log_lines(server: GatewayProcess, *words: str) -> list[str]:
    return [line for line in server.log_path.read_text().splitlines() if all(word in line for word in words)]


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {TIMEOUT_S}s: {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_client_produces_and_consumes_over_sasl(secured, client, mechanism):
    user, password = credentials(mechanism)
    config = client_config(client, mechanism, user, password)
    produce, consume = CLIENTS[client]
    topic = f"sasl-{client}-{mechanism}".lower()
    sent = [Sent(b"record-%d" % n, key=b"k", partition=0) for n in range(3)]
    bootstrap = f"127.0.0.1:{secured.sasl_port}"
    assert produce(bootstrap, topic, sent, **config) == [0, 1, 2]
    assert same_records(sent, consume(bootstrap, topic, [0], len(sent), **config))
    assert log_lines(secured, "event='authenticated'", f"principal='User:{user}'", f"mechanism='{mechanism}'")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_pinned_to_kafka_0_10_sends_bare_tokens_after_a_v0_handshake(secured, mechanism):
    user, password = credentials(mechanism)
    config = {**client_config("kafka-python", mechanism, user, password), "api_version": (0, 10)}
    produce, consume = CLIENTS["kafka-python"]
    topic = f"sasl-old-client-{mechanism}".lower()
    sent = [Sent(b"old-%d" % n, partition=0) for n in range(3)]
    bootstrap = f"127.0.0.1:{secured.sasl_port}"
    assert produce(bootstrap, topic, sent, **config) == [0, 1, 2]
    assert [g.value for g in consume(bootstrap, topic, [0], len(sent), **config)] == [s.value for s in sent]
    assert log_lines(secured, "event='authenticated'", f"principal='User:{user}'", "handshake_version=0")


@needs_kcat
def test_kcat_produces_and_consumes_with_scram(secured):
    user, password = SCRAM_USERS["SCRAM-SHA-512"]
    broker = ("-b", f"127.0.0.1:{secured.sasl_port}", "-X", "security.protocol=SASL_PLAINTEXT",
              "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}")
    run_kcat(*broker, "-P", "-t", "sasl-kcat", "-p", "0", stdin=b"one\ntwo\n")
    out = run_kcat(*broker, "-C", "-t", "sasl-kcat", "-o", "beginning", "-e", "-f", "%s@%o\n")
    assert out.splitlines() == ["one@0", "two@1"]


def unsecured_jwt(principal: str, lifetime_s: int = 3600) -> str:
    """What Kafka's unsecured login module makes: alg none, the principal in `sub`, an hour to live."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': principal, 'iat': now, 'exp': now + lifetime_s})}."


def oauthbearer_config(client: str, principal: str) -> dict:
    if client == "confluent-kafka":
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": f"principal={principal}"}
    if client == "kafka-python":
        from kafka.net.sasl.oauth import AbstractTokenProvider
        provider = type("Unsecured", (AbstractTokenProvider,), {"token": lambda self: unsecured_jwt(principal)})
    else:
        from aiokafka.abc import AbstractTokenProvider

        async def token(self):
            return unsecured_jwt(principal)
        provider = type("Unsecured", (AbstractTokenProvider,), {"token": token})
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": provider()}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_client_authenticates_with_an_unsecured_oauthbearer_token(secured, client):
    principal = f"carol-{client}"
    produce, _ = CLIENTS[client]
    topic = f"sasl-oauthbearer-{client}"
    assert produce(f"127.0.0.1:{secured.sasl_port}", topic, [Sent(b"token", partition=0)],
                   **oauthbearer_config(client, principal)) == [0]
    assert log_lines(secured, "event='authenticated'", f"principal='User:{principal}'", "mechanism='OAUTHBEARER'")


def test_kafka_python_admin_creates_a_scram_user_over_sasl(secured):
    from kafka import KafkaAdminClient
    from kafka.admin import UserScramCredentialUpsertion as Upsertion
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{secured.sasl_port}",
                             **client_config("kafka-python", "PLAIN", "admin", PLAIN_USERS["admin"]))
    try:
        assert admin.alter_user_scram_credentials([Upsertion("kim", "SCRAM-SHA-512", "kim-secret")]) == {"kim": None}
        described = admin.describe_user_scram_credentials(["kim"])["kim"]
        assert described["error"] is None and [c["iterations"] for c in described["credential_infos"]] == [4096]
    finally:
        admin.close()
    config = client_config("kafka-python", "SCRAM-SHA-512", "kim", "kim-secret")
    assert CLIENTS["kafka-python"][0](f"127.0.0.1:{secured.sasl_port}", "sasl-kim", [Sent(b"k")], **config) == [0]


def test_clients_of_the_sasl_listener_are_told_its_endpoint(secured):
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.sasl_port}",
                         **client_config("confluent-kafka", "PLAIN", "alice", PLAIN_USERS["alice"])})
    brokers = admin.list_topics(timeout=TIMEOUT_S).brokers.values()
    assert {(b.host, b.port) for b in brokers} == {("127.0.0.1", secured.sasl_port)}


def test_scram_credentials_are_described_without_secrets_and_checked_as_kafka_checks_them(secured):
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    every = admin.describe_user_scram_credentials().result(TIMEOUT_S)
    named = {user: future.result(TIMEOUT_S) for user, future in admin.describe_user_scram_credentials(["sam"]).items()}
    for described in (every, named):
        infos = {user: [(i.mechanism, i.iterations) for i in d.scram_credential_infos] for user, d in described.items()}
        assert infos["sam"] == [(ScramMechanism.SCRAM_SHA_256, 4096)]
    assert {"sam", "sue"} <= set(every) and set(named) == {"sam"}

    def refused(future) -> int:
        with pytest.raises(KafkaException) as failed:
            future.result(TIMEOUT_S)
        return failed.value.args[0].code()

    assert refused(admin.describe_user_scram_credentials(["nobody"])["nobody"]) == ErrorCode.RESOURCE_NOT_FOUND
    too_few = UserScramCredentialUpsertion("tim", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4095), b"pw")
    too_many = UserScramCredentialUpsertion("tom", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 16385), b"pw")
    missing = UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_512)
    results = admin.alter_user_scram_credentials([too_few, too_many, missing])
    assert refused(results["tim"]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert refused(results["tom"]) == ErrorCode.UNACCEPTABLE_CREDENTIAL
    assert refused(results["nobody"]) == ErrorCode.RESOURCE_NOT_FOUND


def test_one_alteration_per_user_and_request_and_one_description_per_user(secured):
    alter, describe = by_name("AlterUserScramCredentials"), by_name("DescribeUserScramCredentials")
    upsert = alter.Request.Upsertions
    salted = SCRAM["SCRAM-SHA-256"].salted_password("pw", b"salt", 4096)
    connection = RawConnection(secured.port)
    answer = connection.call(alter, 0, alter.Request(deletions=[], upsertions=[
        upsert(name="dup", mechanism=1, iterations=4096, salt=b"salt", salted_password=salted),
        upsert(name="dup", mechanism=2, iterations=4096, salt=b"salt", salted_password=salted),
        upsert(name="", mechanism=1, iterations=4096, salt=b"salt", salted_password=salted),
        upsert(name="odd", mechanism=3, iterations=4096, salt=b"salt", salted_password=salted),
    ]))
    assert {r.user: (r.error_code, r.error_message) for r in answer.results} == {
        "dup": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    }
    name = describe.Request.Users
    answer = connection.call(describe, 0, describe.Request(users=[name(name="sam"), name(name="sam")]))
    assert [(r.user, r.error_code) for r in answer.results] == [("sam", ErrorCode.DUPLICATE_RESOURCE)]


def test_the_jaas_config_is_reported_as_sensitive_without_its_value(secured):
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    broker = ConfigResource(ResourceType.BROKER, "0")
    entry = admin.describe_configs([broker])[broker].result(TIMEOUT_S)["sasl.jaas.config"]
    assert entry.is_sensitive and entry.value is None


# Wrong clients ------------------------------------------------------------

def authenticate_plain(connection: RawConnection, user: str, password: str):
    assert connection.handshake("PLAIN").error_code == ErrorCode.NONE
    return connection.authenticate(f"\0{user}\0{password}".encode())


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


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_plaintext_client_on_the_sasl_port_is_closed_at_once(secured, mechanism):
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


# Credentials kept, sessions re-authenticated ----------------------------------

def test_scram_credentials_survive_a_restart_and_no_password_is_stored(tmp_path):
    server = sasl_gateway(tmp_path / "gateway")
    create_scram_users(server, SCRAM_USERS, iterations=8192)
    server.stop()
    server.start()
    try:
        for mechanism, (user, password) in SCRAM_USERS.items():
            config = client_config("confluent-kafka", mechanism, user, password)
            assert confluent_produce(f"127.0.0.1:{server.sasl_port}", "after-restart", [Sent(b"x")], **config)
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        deletion = UserScramCredentialDeletion("sam", ScramMechanism.SCRAM_SHA_256)
        admin.alter_user_scram_credentials([deletion])["sam"].result(TIMEOUT_S)
        connection = RawConnection(server.sasl_port)
        connection.handshake("SCRAM-SHA-256")
        client = ScramClient(SCRAM["SCRAM-SHA-256"], "sam", SCRAM_USERS["SCRAM-SHA-256"][1], "n")
        assert connection.authenticate(client.first()).error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    finally:
        server.stop()
    stored = b"".join(path.read_bytes() for path in (tmp_path / "gateway").rglob("*") if path.is_file())
    assert b"stored_key" in stored  # the journal is there, holding keys only
    for _, password in SCRAM_USERS.values():
        assert password.encode() not in stored


def wait_until_closed(connection: RawConnection, started: float, lifetime_s: float) -> None:
    """Requests are served until the session ends (not before `started` + `lifetime_s`), then it is closed."""
    while connection.metadata() is not None:
        assert time.monotonic() - started < TIMEOUT_S
        time.sleep(0.05)
    assert time.monotonic() - started >= lifetime_s


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
