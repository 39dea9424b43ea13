"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), answered as Kafka answers them.

Describe and alter follow Kafka's controller (ScramControlManager): its checks,
errors and messages.
"""

from __future__ import annotations

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.security.scram_credentials import check_iterations, checked_mechanism
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import ScramCredential, ScramMechanism

DESCRIBE, ALTER = by_name("DescribeUserScramCredentials"), by_name("AlterUserScramCredentials")


@handles("DescribeUserScramCredentials")
async def describe_user_scram_credentials(request: Request, services: Services):
    known = services.scram_credentials.users()
    asked = [user.name for user in request.body.users or []]
    Result, Info = DESCRIBE.Response.Results, DESCRIBE.Response.Results.CredentialInfos
    results = []
    for user in dict.fromkeys(asked) if asked else known:
        result = Result(user=user, credential_infos=[])
        if asked.count(user) > 1:
            result.error_code = ErrorCode.DUPLICATE_RESOURCE
            result.error_message = f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
        elif user not in known:
            result.error_code = ErrorCode.RESOURCE_NOT_FOUND
            result.error_message = f"Attempt to describe a user credential that does not exist: {user}"
        else:
            result.credential_infos = [Info(mechanism=m, iterations=i) for m, i in known[user]]
        results.append(result)
    return DESCRIBE.Response(results=results)


@handles("AlterUserScramCredentials")
async def alter_user_scram_credentials(request: Request, services: Services):
    """As Kafka's controller: one alteration per user and request (a second one fails the user with
    DUPLICATE_RESOURCE), each checked before any is applied; then one result per user."""
    store = services.scram_credentials
    chosen: dict[str, tuple[ScramMechanism, ScramCredential | None]] = {}
    failed: dict[str, KafkaError] = {}
    body = request.body
    for alteration, checked in [(d, _deletion) for d in body.deletions] + [(u, _upsertion) for u in body.upsertions]:
        user = alteration.name
        if user in failed:
            continue
        if chosen.pop(user, None) is not None:
            failed[user] = KafkaError(ErrorCode.DUPLICATE_RESOURCE,
                                      "A user credential cannot be altered twice in the same request")
            continue
        try:
            chosen[user] = checked(alteration, store)
        except KafkaError as exc:
            failed[user] = exc
    for user, (mechanism, credential) in chosen.items():
        await store.alter(user, mechanism, credential)
    Result = ALTER.Response.Results
    return ALTER.Response(results=[Result(user=user) for user in chosen] + [
        Result(user=user, error_code=exc.code, error_message=exc.message) for user, exc in failed.items()])


def _deletion(deletion, store) -> tuple[ScramMechanism, None]:
    mechanism = checked_mechanism(deletion.name, deletion.mechanism)
    if not store.has(deletion.name, mechanism):
        raise KafkaError(ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
    return mechanism, None


def _upsertion(upsertion, store) -> tuple[ScramMechanism, ScramCredential]:
    mechanism = checked_mechanism(upsertion.name, upsertion.mechanism)
    check_iterations(upsertion.iterations)
    return mechanism, ScramCredential.from_salted_password(mechanism, upsertion.salt, upsertion.salted_password,
                                                           upsertion.iterations)
