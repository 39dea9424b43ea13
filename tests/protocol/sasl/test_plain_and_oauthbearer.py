"""PLAIN against known users; OAUTHBEARER with unsecured JWTs as Kafka's unsecured validator checks them."""

import base64
import json

import pytest

from protocol.sasl.exchange import SaslFailure
from protocol.sasl.oauthbearer import OAuthBearerExchange, UnsecuredValidator
from protocol.sasl.plain import PlainExchange

NOW_MS = 1_700_000_000_000


def test_plain_authenticates_a_known_user():
    exchange = PlainExchange({"alice": "alice-secret"})
    assert exchange.step(b"\0alice\0alice-secret") == b""
    assert exchange.complete and exchange.claimed == "alice"


@pytest.mark.parametrize("token, to_client", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0\0alice-secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret", "Authentication failed: Client requested an authorization id that is "
                                  "different from username"),
])
def test_plain_refuses_as_kafka_does(token, to_client):
    with pytest.raises(SaslFailure) as failed:
        PlainExchange({"alice": "alice-secret"}).step(token)
    assert failed.value.to_client == to_client and "alice-secret" not in failed.value.reason


def jwt(claims: dict, header: dict | None = None) -> str:
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part(header or {'alg': 'none'})}.{part(claims)}."


def initial(token: str, authzid: str = "") -> bytes:
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}\x01auth=Bearer {token}\x01\x01".encode()


def oauth(validator: UnsecuredValidator | None = None) -> OAuthBearerExchange:
    return OAuthBearerExchange(validator or UnsecuredValidator(), lambda: NOW_MS)


def test_oauthbearer_takes_the_sub_claim_and_the_expiry():
    exchange = oauth()
    assert exchange.step(initial(jwt({"sub": "carol", "exp": NOW_MS // 1000 + 60, "iat": NOW_MS // 1000}))) == b""
    assert exchange.complete and exchange.claimed == "carol" and exchange.expires_ms == NOW_MS + 60_000


def test_oauthbearer_principal_claim_and_required_scope_are_options():
    validator = UnsecuredValidator(principal_claim="user", required_scope=("read", "write"))
    token = jwt({"user": "dave", "exp": NOW_MS // 1000 + 60, "scope": "read write admin"})
    exchange = oauth(validator)
    exchange.step(initial(token, authzid="dave"))
    assert exchange.claimed == "dave"


@pytest.mark.parametrize("token", [
    jwt({"sub": "carol", "exp": NOW_MS // 1000 - 1}),  # expired
    jwt({"sub": "carol"}),  # no expiry
    jwt({"exp": NOW_MS // 1000 + 60}),  # no principal
    jwt({"sub": "carol", "exp": NOW_MS // 1000 + 60}, {"alg": "HS256"}),  # signed
    jwt({"sub": "carol", "exp": NOW_MS // 1000 + 60, "iat": NOW_MS // 1000 + 30}),  # issued in the future
    jwt({"sub": "carol", "exp": NOW_MS // 1000 + 60}) + "signature",
    "not-a-jwt",
])
def test_oauthbearer_refuses_a_bad_token_with_a_json_challenge_then_fails(token):
    exchange = oauth()
    assert json.loads(exchange.step(initial(token))) == {"status": "invalid_token"}
    with pytest.raises(SaslFailure) as failed:
        exchange.step(b"\x01")
    assert failed.value.to_client == '{"status": "invalid_token"}' and not exchange.complete


def test_a_refused_token_still_names_the_principal_it_claims():
    exchange = oauth()
    exchange.step(initial(jwt({"sub": "mallory", "exp": NOW_MS // 1000 - 1})))
    assert exchange.claimed == "mallory" and not exchange.complete


def test_oauthbearer_refuses_a_missing_scope_and_a_malformed_message():
    exchange = oauth(UnsecuredValidator(required_scope=("admin",)))
    assert b"invalid_token" in exchange.step(initial(jwt({"sub": "c", "exp": NOW_MS // 1000 + 60, "scope": "read"})))
    with pytest.raises(SaslFailure, match="malformed"):
        oauth().step(b"n,,auth=Bearer x")
