"""The real clients over SASL_PLAINTEXT beside PLAINTEXT: PLAIN users from sasl.jaas.config, SCRAM
credentials created with AlterUserScramCredentials and kept across restarts, unsecured OAUTHBEARER tokens."""

from __future__ import annotations

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

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.admin import create_topic
from tests.gateway.clients import CLIENTS, TIMEOUT_S, Sent, confluent_produce, same_records
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import (
    PLAIN_USERS,
    SCRAM_USERS,
    authenticate_plain,
    client_config,
    create_scram_users,
    credentials,
    log_lines,
    sasl_gateway,
    secured_gateway,  # noqa: F401  (the fixture `secured`)
    unsecured_jwt,
)
from tests.gateway.test_kcat_and_old_clients import needs_kcat, run_kcat
from tests.protocol.records.bad_batches import good
from tests.protocol.sasl.scram_client import ScramClient


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


def test_user_quotas_apply_to_the_authenticated_principal(secured):
    """A producer_byte_rate for the user quinn throttles a client authenticated as quinn, not an anonymous one."""
    alter, produce = by_name("AlterClientQuotas"), by_name("Produce")
    Entry = alter.Request.Entries
    admin = RawConnection(secured.port)
    answer = admin.call(alter, 1, alter.Request(validate_only=False, entries=[Entry(
        entity=[Entry.Entity(entity_type="user", entity_name="quinn")],
        ops=[Entry.Ops(key="producer_byte_rate", value=1.0, remove=False)])]))
    assert [entry.error_code for entry in answer.entries] == [ErrorCode.NONE]
    create_topic(secured.bootstrap, "sasl-quota")  # a produce never creates its topic

    def throttle_ms(connection: RawConnection) -> int:
        Data = produce.Request.TopicData
        response = connection.call(produce, 9, produce.Request(acks=1, timeout_ms=int(TIMEOUT_S * 1000), topic_data=[
            Data(name="sasl-quota", partition_data=[Data.PartitionData(index=0, records=good([b"x" * 200]))])]))
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        return response.throttle_time_ms

    assert throttle_ms(admin) == 0
    quinn = RawConnection(secured.sasl_port)
    assert authenticate_plain(quinn, "quinn", PLAIN_USERS["quinn"]).error_code == ErrorCode.NONE
    assert throttle_ms(quinn) > 0
