"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken (KIP-48), as
Kafka 4.0 answers them.

The broker's checks are here (KafkaApis): no token request over PLAINTEXT, over
one-way SSL or from a session a token authenticated; CREATE_TOKENS on the
owner (a USER resource) to create a token for someone else; only User
renewers. What Kafka's controller decides (DelegationTokenControlManager) the
token store decides: timestamps, ownership, expiry. These responses carry no
error message, only the code.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.security.delegation_token_store import TokenInfo
from gateway.server.dispatch import Request
from gateway.server.principal import ANONYMOUS, KafkaPrincipal
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

CREATE, RENEW, EXPIRE, DESCRIBE = (by_name(f"{verb}DelegationToken") for verb in ("Create", "Renew", "Expire",
                                                                                    "Describe"))
REFUSED_TIMESTAMP = -1  # Kafka's timestamps in the broker's own refusals; its controller's leave them 0
USER_TYPE = "User"
FIRST_REQUESTER_VERSION = 3  # Create and Describe tell who requested a token from v3 on


def _token_requests_allowed(request: Request) -> bool:
    """Kafka's allowTokenRequests: not over PLAINTEXT, nor one-way SSL, nor from a token's session."""
    connection = request.connection
    protocol, principal = connection.security_protocol, connection.principal
    return not (principal.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and principal == ANONYMOUS))


@handles("CreateDelegationToken")
async def create_delegation_token(request: Request, services: Services):
    body, requester = request.body, request.connection.principal
    owner = KafkaPrincipal(body.owner_principal_type, body.owner_principal_name) if body.owner_principal_name \
        else requester

    def created(**fields):
        return CREATE.Response(principal_type=owner.type, principal_name=owner.name,
                               **_requester(requester, request.version), **fields)

    def refusal(code: ErrorCode, timestamp: int = REFUSED_TIMESTAMP):
        return created(error_code=code, issue_timestamp_ms=timestamp, expiry_timestamp_ms=timestamp,
                       max_timestamp_ms=timestamp)

    if not _token_requests_allowed(request):
        return refusal(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not allowed(request, services, Operation.CREATE_TOKENS, ResourceType.USER, str(owner)):
        return refusal(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(renewer.principal_type != USER_TYPE for renewer in body.renewers):
        return refusal(ErrorCode.INVALID_PRINCIPAL_TYPE)
    renewers = [KafkaPrincipal(renewer.principal_type, renewer.principal_name) for renewer in body.renewers]
    try:
        token = await services.delegation_tokens.create(owner, requester, renewers, body.max_lifetime_ms)
    except KafkaError as exc:
        return refusal(exc.code, 0)
    return created(issue_timestamp_ms=token.issue_ms, expiry_timestamp_ms=token.expiry_ms,
                   max_timestamp_ms=token.max_ms, token_id=token.token_id,
                   hmac=services.delegation_tokens.hmac(token.token_id))


def _requester(requester: KafkaPrincipal, version: int) -> dict:
    """The requester's fields of a token, in the versions that have them."""
    if version < FIRST_REQUESTER_VERSION:
        return {}
    return {"token_requester_principal_type": requester.type, "token_requester_principal_name": requester.name}


@handles("RenewDelegationToken")
async def renew_delegation_token(request: Request, services: Services):
    return await _new_expiry(request, RENEW, services.delegation_tokens.renew, request.body.renew_period_ms)


@handles("ExpireDelegationToken")
async def expire_delegation_token(request: Request, services: Services):
    return await _new_expiry(request, EXPIRE, services.delegation_tokens.expire, request.body.expiry_time_period_ms)


async def _new_expiry(request: Request, api, change, period_ms: int):
    """Renew or expire: the token's new expiry timestamp, or the error (its timestamp left 0 by the controller)."""
    if not _token_requests_allowed(request):
        return api.Response(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                            expiry_timestamp_ms=REFUSED_TIMESTAMP)
    try:
        expiry_ms = await change(request.connection.principal, request.body.hmac, period_ms)
    except KafkaError as exc:
        return api.Response(error_code=exc.code, expiry_timestamp_ms=0)
    return api.Response(expiry_timestamp_ms=expiry_ms)


@handles("DescribeDelegationToken")
async def describe_delegation_token(request: Request, services: Services):
    store, asked = services.delegation_tokens, request.body.owners
    if not _token_requests_allowed(request):
        return DESCRIBE.Response(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if not store.enabled:
        return DESCRIBE.Response(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    owners = None if asked is None else [KafkaPrincipal(o.principal_type, o.principal_name) for o in asked]
    if owners == []:  # an empty list (not null, which is everyone's): none
        return DESCRIBE.Response()
    tokens = [token for token in store.tokens.values() if _visible(request, services, owners, token)]
    return DESCRIBE.Response(tokens=[_described(token, store.hmac(token.token_id), request.version)
                                     for token in tokens])


def _visible(request: Request, services: Services, owners: list[KafkaPrincipal] | None, token: TokenInfo) -> bool:
    """Kafka's filterToken: among the owners asked for, one's own tokens (owned, requested or renewable), and
    others' with DESCRIBE on the token or DESCRIBE_TOKENS on its owner."""
    if owners is not None and not any(token.owner_or_renewer(owner) for owner in owners):
        return False
    return (token.owner_or_renewer(request.connection.principal)
            or allowed(request, services, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
            or allowed(request, services, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner)))


def _described(token: TokenInfo, hmac: bytes, version: int):
    Token, Renewer = DESCRIBE.Response.Tokens, DESCRIBE.Response.Tokens.Renewers
    return Token(principal_type=token.owner.type, principal_name=token.owner.name,
                 **_requester(token.requester, version), issue_timestamp=token.issue_ms,
                 expiry_timestamp=token.expiry_ms, max_timestamp=token.max_ms, token_id=token.token_id, hmac=hmac,
                 renewers=[Renewer(principal_type=p.type, principal_name=p.name) for p in token.renewers])
