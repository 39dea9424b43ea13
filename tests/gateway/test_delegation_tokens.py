"""Delegation tokens as Kafka 4.0's broker answers what its clients cannot ask (tests/java has the Java client's
Admin API and token sessions): tokens for another owner (CREATE_TOKENS on the owner), who describes which tokens,
periods capped by the settings, an expired token before its removal, requests refused by where they come from."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import ResourceType as ConfigResourceType

from gateway.acls.model import Operation, PatternType, Permission, ResourceType
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import TIMEOUT_S
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import PLAIN_USERS, client_config, sasl_gateway
from tests.gateway.test_acls import STANDARD
from tests.gateway.token_calls import (
    SECRET,
    create,
    described_ids,
    expire,
    renew,
    signed_in,
    token_session,
)

CREATE_ACLS = by_name("CreateAcls")
DAY_MS, WEEK_MS = 86_400_000, 604_800_000


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A SASL gateway with tokens on, the authorizer on and admin its super user, everyone else allowed nothing."""
    server = sasl_gateway(tmp_path_factory.mktemp("tokens") / "gateway", *SECRET,
                          "--authorizer-class-name", STANDARD, "--super-users", "User:admin")
    yield server
    server.stop()


def grant(server, operation: Operation, resource_type: ResourceType, name: str, principal: str) -> None:
    admin = signed_in(server.sasl_port, "admin")
    answer = admin.call(CREATE_ACLS, 3, CREATE_ACLS.Request(creations=[CREATE_ACLS.Request.Creations(
        resource_type=resource_type, resource_name=name, resource_pattern_type=PatternType.LITERAL,
        principal=principal, host="*", operation=operation, permission_type=Permission.ALLOW)]))
    assert [result.error_code for result in answer.results] == [ErrorCode.NONE]


def test_a_token_for_another_owner_needs_create_tokens_on_that_user(guarded):
    alice = signed_in(guarded.sasl_port, "alice")
    refused = create(alice, owner="quinn")
    assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (refused.principal_name, refused.token_requester_principal_name, refused.issue_timestamp_ms,
            refused.token_id) == ("quinn", "alice", -1, "")
    grant(guarded, Operation.CREATE_TOKENS, ResourceType.USER, "User:quinn", "User:alice")
    created = create(alice, owner="quinn")
    assert created.error_code == ErrorCode.NONE
    assert (created.principal_name, created.token_requester_principal_name) == ("quinn", "alice")
    session = token_session(guarded.sasl_port, created.token_id, created.hmac)
    assert session is not None  # as quinn: alice may make tokens she cannot see through
    assert guarded.log_path.read_text().count("principal='User:quinn' mechanism='SCRAM-SHA-512' "
                                              "token_authenticated=True") == 1


def test_owners_requesters_and_renewers_describe_a_token_others_need_describe_on_it(guarded):
    quinn, alice = signed_in(guarded.sasl_port, "quinn"), signed_in(guarded.sasl_port, "alice")
    own = create(quinn).token_id
    renewable = create(quinn, renewers=("User:alice",)).token_id
    assert {own, renewable} <= described_ids(quinn)
    assert renewable in described_ids(alice) and own not in described_ids(alice)
    assert described_ids(alice, owners=["quinn"]) - described_ids(alice) == set()
    assert described_ids(quinn, owners=[]) == set()  # an empty list, not null: nobody's
    grant(guarded, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, own, "User:alice")
    assert {own, renewable} <= described_ids(alice, owners=["quinn"])
    assert own not in described_ids(alice, owners=["admin"])  # only the owners asked for


def test_lifetimes_are_capped_by_the_settings_and_renewals_by_the_maximum(guarded):
    alice = signed_in(guarded.sasl_port, "alice")
    token = create(alice, max_lifetime_ms=10 * WEEK_MS)
    assert token.max_timestamp_ms - token.issue_timestamp_ms == WEEK_MS
    assert token.expiry_timestamp_ms - token.issue_timestamp_ms == DAY_MS
    renewed = renew(alice, token.hmac, 10 * DAY_MS)
    assert renewed.error_code == ErrorCode.NONE
    assert abs(renewed.expiry_timestamp_ms - time.time() * 1000 - DAY_MS) < 60_000
    short = create(alice, max_lifetime_ms=60_000)
    assert short.expiry_timestamp_ms == short.max_timestamp_ms == short.issue_timestamp_ms + 60_000
    assert renew(alice, short.hmac).expiry_timestamp_ms == short.max_timestamp_ms
    assert expire(alice, short.hmac, 10 * DAY_MS).expiry_timestamp_ms == short.max_timestamp_ms


def test_an_expired_token_is_refused_renewal_but_expires_at_once(guarded):
    alice, quinn = signed_in(guarded.sasl_port, "alice"), signed_in(guarded.sasl_port, "quinn")
    token = create(alice, max_lifetime_ms=1)
    time.sleep(0.05)  # the check every hour has not removed it
    assert token.token_id in described_ids(alice)
    assert renew(alice, token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert expire(quinn, token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert expire(alice, token.hmac, 1000).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    removed = expire(alice, token.hmac)
    assert removed.error_code == ErrorCode.NONE and abs(removed.expiry_timestamp_ms - time.time() * 1000) < 60_000
    assert token.token_id not in described_ids(alice)
    gone = renew(alice, token.hmac)
    assert (gone.error_code, gone.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_token_requests_are_refused_over_plaintext_and_from_a_token_session(guarded):
    token = create(signed_in(guarded.sasl_port, "alice"))
    session = token_session(guarded.sasl_port, token.token_id, token.hmac, "SCRAM-SHA-256")
    plaintext = RawConnection(guarded.port)
    for connection in (session, plaintext):
        refused = create(connection)
        assert (refused.error_code, refused.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                                                     -1)
        assert renew(connection, token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert expire(connection, token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


@pytest.mark.parametrize("version", [0, 1, 2])
def test_before_v3_a_token_is_the_requesters_and_described_without_requester(guarded, version):
    quinn = signed_in(guarded.sasl_port, "quinn")
    created = create(quinn, version=version)
    assert (created.error_code, created.principal_type, created.principal_name) == (ErrorCode.NONE, "User", "quinn")
    assert len(created.hmac) == 64
    assert created.token_id in described_ids(quinn, version=version)


def test_the_apis_are_advertised_and_the_secret_key_described_as_sensitive_without_its_value(guarded):
    versions = by_name("ApiVersions")
    answer = RawConnection(guarded.port).call(versions, 3, versions.Request(client_software_name="t",
                                                                           client_software_version="1"))
    ranges = {key.api_key: (key.min_version, key.max_version) for key in answer.api_keys}
    assert [ranges.get(key) for key in (38, 39, 40, 41)] == [(0, 3), (0, 2), (0, 2), (0, 3)]
    broker = ConfigResource(ConfigResourceType.BROKER, "0")
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{guarded.sasl_port}",
                         **client_config("confluent-kafka", "PLAIN", "admin", PLAIN_USERS["admin"])})
    config = admin.describe_configs([broker])[broker].result(TIMEOUT_S)
    secret = config["delegation.token.secret.key"]
    assert secret.is_sensitive and secret.value is None
    assert config["delegation.token.expiry.check.interval.ms"].value == "3600000"
