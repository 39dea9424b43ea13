"""The SCRAM server's exchange: RFC 7677's example, any user and password, and what it refuses."""

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.sasl.exchange import SaslFailure
from protocol.sasl.scram import MECHANISMS, SHA_256, ScramCredential, ScramExchange, TokenCredential
from tests.protocol.sasl.scram_client import ScramClient

# RFC 7677, section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE, RFC_SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def credential(mechanism, password: str, salt: bytes = b"salt-of-sixteen!", iterations: int = 4096):
    salted = mechanism.salted_password(password, salt, iterations)
    return ScramCredential.from_salted_password(mechanism, salt, salted, iterations)


def exchange(mechanism, users: dict, nonce: str = "server-nonce") -> ScramExchange:
    return ScramExchange(mechanism, users.get, nonce)


def test_rfc_7677_example():
    server = exchange(SHA_256, {"user": credential(SHA_256, "pencil", RFC_SALT)}, RFC_SERVER_NONCE)
    server_first = server.step(b"n,,n=user,r=" + RFC_CLIENT_NONCE.encode())
    assert server_first == f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    final = server.step(f"c=biws,r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},"
                        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=".encode())
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.claimed == "user"


@given(mechanism=st.sampled_from(sorted(MECHANISMS)), user=st.text(min_size=1, max_size=20),
       password=st.text(min_size=1, max_size=20), nonce=st.text("abcdefXYZ0123456789+/", min_size=1, max_size=30))
def test_any_user_and_password_authenticate_and_the_server_proves_it_knows_the_credential(
        mechanism, user, password, nonce):
    scram = MECHANISMS[mechanism]
    server = exchange(scram, {user: credential(scram, password)})
    client = ScramClient(scram, user, password, nonce)
    server_final = server.step(client.final(server.step(client.first())))
    assert server.complete and server.claimed == user and client.verifies(server_final)


@given(password=st.text(min_size=1, max_size=20), wrong=st.text(min_size=1, max_size=20))
def test_a_wrong_password_fails(password, wrong):
    if password == wrong:
        return
    server = exchange(SHA_256, {"alice": credential(SHA_256, password)})
    client = ScramClient(SHA_256, "alice", wrong, "nonce")
    server_first = server.step(client.first())
    with pytest.raises(SaslFailure, match="invalid client proof"):
        server.step(client.final(server_first))
    assert not server.complete


def test_an_unknown_user_fails_at_the_first_message():
    with pytest.raises(SaslFailure, match="unknown user"):
        exchange(SHA_256, {}).step(b"n,,n=nobody,r=abc")


@pytest.mark.parametrize("first", [
    b"p=tls-unique,,n=alice,r=abc",  # channel binding
    b"n,,r=abc,n=alice",  # attributes out of order
    b"n,,n=al=ice,r=abc",  # a bad escape in the name
    b"n,a=bob,n=alice,r=abc",  # another authorization id
    b"n,,n=alice",  # no nonce
    b"\xff\xfe",  # not UTF-8
])
def test_a_malformed_or_refused_first_message_fails(first):
    with pytest.raises(SaslFailure):
        exchange(SHA_256, {"alice": credential(SHA_256, "secret")}).step(first)


def test_the_final_message_must_carry_the_combined_nonce_and_the_gs2_header():
    server = exchange(SHA_256, {"alice": credential(SHA_256, "secret")})
    client = ScramClient(SHA_256, "alice", "secret", "client")
    final = client.final(server.step(client.first()))
    with pytest.raises(SaslFailure, match="nonce"):
        server.step(final.replace(b"r=client", b"r=other"))
    server = exchange(SHA_256, {"alice": credential(SHA_256, "secret")})
    client.final(server.step(client.first()))
    with pytest.raises(SaslFailure, match="channel binding"):
        server.step(final.replace(b"c=biws", b"c=eSws"))


def test_old_librdkafkas_nonce_with_its_own_in_front_once_more_is_taken_as_kafka_takes_it():
    server = exchange(SHA_256, {"alice": credential(SHA_256, "secret")})
    client = ScramClient(SHA_256, "alice", "secret", "client")
    assert client.verifies(server.step(client.final(server.step(client.first()), nonce_prefix="client")))


def test_a_name_with_commas_and_equals_signs_is_decoded():
    user = "a,b=c"
    server = exchange(SHA_256, {user: credential(SHA_256, "secret")})
    client = ScramClient(SHA_256, user, "secret", "n")
    server.step(client.final(server.step(client.first())))
    assert server.claimed == user


def test_a_delegation_token_authenticates_with_tokenauth_as_its_owner_until_its_expiry():
    hmac_text = base64.b64encode(b"h" * 64).decode()
    token = TokenCredential(credential(SHA_256, hmac_text), "alice", 1_700_000_000_000)
    server = ScramExchange(SHA_256, {}.get, "server", {"token-id": token}.get)
    client = ScramClient(SHA_256, "token-id", hmac_text, "client", extensions="tokenauth=true")
    assert client.verifies(server.step(client.final(server.step(client.first()))))
    assert (server.claimed, server.token_owner, server.expires_ms) == ("token-id", "alice", 1_700_000_000_000)


@pytest.mark.parametrize("extensions", ["", "tokenauth=false"])
def test_a_token_id_without_tokenauth_true_is_an_unknown_user(extensions):
    token = TokenCredential(credential(SHA_256, "secret"), "alice", 0)
    server = ScramExchange(SHA_256, {}.get, "server", {"token-id": token}.get)
    client = ScramClient(SHA_256, "token-id", "secret", "client", extensions=extensions)
    with pytest.raises(SaslFailure, match="unknown user"):
        server.step(client.first())


def test_an_unknown_token_and_a_malformed_extension_fail():
    with pytest.raises(SaslFailure, match="unknown delegation token"):
        exchange(SHA_256, {"token-id": credential(SHA_256, "secret")}).step(b"n,,n=token-id,r=abc,tokenauth=TRUE")
    with pytest.raises(SaslFailure, match="extension"):
        exchange(SHA_256, {"alice": credential(SHA_256, "secret")}).step(b"n,,n=alice,r=abc,tokenauth")
