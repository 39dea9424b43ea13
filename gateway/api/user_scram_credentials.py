"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), answered as Kafka answers them.

An alteration is checked and applied user by user: one result per user, and
a user's alterations all fail if one of them does.
"""

from __future__ import annotations

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.security.scram_credentials import check_upsertion, mechanism_of
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

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
    body = request.body
    by_user: dict[str, tuple[list, list]] = {}
    for deletion in body.deletions:
        by_user.setdefault(deletion.name, ([], []))[0].append((deletion.name, deletion.mechanism))
    for upsertion in body.upsertions:
        by_user.setdefault(upsertion.name, ([], []))[1].append(
            (upsertion.name, upsertion.mechanism, upsertion.iterations, upsertion.salt, upsertion.salted_password))
    results = []
    for user, (deletions, upsertions) in by_user.items():
        result = ALTER.Response.Results(user=user)
        try:
            _check(user, deletions, upsertions)
            await services.scram_credentials.alter(deletions, upsertions)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        results.append(result)
    return ALTER.Response(results=results)


def _check(user: str, deletions: list, upsertions: list) -> None:
    if not user:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    for _, type_id in deletions:
        mechanism_of(type_id)
    for upsertion in upsertions:
        check_upsertion(*upsertion)
    mechanisms = [alteration[1] for alteration in deletions + upsertions]
    if len(set(mechanisms)) != len(mechanisms):
        raise KafkaError(ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
