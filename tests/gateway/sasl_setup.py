"""What the SASL tests share: a gateway with a PLAINTEXT and a SASL_PLAINTEXT listener, its users, the
clients' settings for them, and waiting for what the gateway logs."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from gateway.testing.ports import free_port
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import TIMEOUT_S
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.server import GatewayProcess

PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret", "quinn": "quinn-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
        "password=\"admin-secret\" " + " ".join(f'user_{u}="{p}"' for u, p in PLAIN_USERS.items()) + ";")
SCRAM_USERS = {"SCRAM-SHA-256": ("sam", "sam-secret-256"), "SCRAM-SHA-512": ("sue", "sue-secret-512")}
WRONG_PASSWORD = "not-the-password-4711"
ENABLED = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
MECHANISM_TYPES = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


def sasl_gateway(data_dir: Path, *options: str) -> GatewayProcess:
    """A gateway with a PLAINTEXT listener (its `port`) and a SASL_PLAINTEXT one (`sasl_port`)."""
    server = GatewayProcess(data_dir, *options)
    with_sasl_listener(server)
    return server.start()


def with_sasl_listener(server: GatewayProcess) -> None:
    """Before it starts: a SASL_PLAINTEXT listener (`sasl_port`) beside the PLAINTEXT one (`port`)."""
    server.sasl_port = free_port()
    server.options = ("--listeners", f"PLAINTEXT://127.0.0.1:{server.port},SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}",
                      "--sasl-enabled-mechanisms", ENABLED, "--sasl-jaas-config", JAAS, *server.options)


def create_scram_users(server: GatewayProcess, users: dict[str, tuple[str, str]], iterations: int = 4096) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    upsertions = [UserScramCredentialUpsertion(user, ScramCredentialInfo(MECHANISM_TYPES[mechanism], iterations),
                                               password.encode())
                  for mechanism, (user, password) in users.items()]
    for future in admin.alter_user_scram_credentials(upsertions).values():
        future.result(TIMEOUT_S)


@pytest.fixture(scope="module", name="secured")
def secured_gateway(tmp_path_factory):
    """One SASL gateway for a test module, its SCRAM users created; the fixture `secured`."""
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


def unsecured_jwt(principal: str, lifetime_s: int = 3600) -> str:
    """What Kafka's unsecured login module makes: alg none, the principal in `sub`, an hour to live."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': principal, 'iat': now, 'exp': now + lifetime_s})}."


def authenticate_plain(connection: RawConnection, user: str, password: str):
    assert connection.handshake("PLAIN").error_code == ErrorCode.NONE
    return connection.authenticate(f"\0{user}\0{password}".encode())


def wait_until_closed(connection: RawConnection, started: float, lifetime_s: float) -> None:
    """Requests are served until the session ends (not before `started` + `lifetime_s`), then it is closed."""
    while connection.metadata() is not None:
        assert time.monotonic() - started < TIMEOUT_S
        time.sleep(0.05)
    assert time.monotonic() - started >= lifetime_s
