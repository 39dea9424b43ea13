"""SaslHandshake and SaslAuthenticate: the connection's SASL session answers, its failures close.

On a listener without SASL (or once authenticated, short of re-authenticating)
Kafka answers them with ILLEGAL_SASL_STATE and keeps the connection.
"""

from __future__ import annotations

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.security.sasl_session import AUTHENTICATED, SaslFailed
from gateway.server.answers import CloseConnection
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

HANDSHAKE, AUTHENTICATE = by_name("SaslHandshake"), by_name("SaslAuthenticate")


@handles("SaslHandshake")
async def sasl_handshake(request: Request, services: Services):
    session = request.connection.authentication
    if session is None:
        return HANDSHAKE.Response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    handshake = await session.handshake(request.body.mechanism, request.version)
    response = HANDSHAKE.Response(error_code=handshake.error_code, mechanisms=handshake.mechanisms)
    if handshake.close:
        raise CloseConnection(f"unsupported SASL mechanism {request.body.mechanism}", answer=response)
    return response


@handles("SaslAuthenticate")
async def sasl_authenticate(request: Request, services: Services):
    session = request.connection.authentication
    if session is None or session.stage == AUTHENTICATED:
        return AUTHENTICATE.Response(error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"", error_message=(
            "SaslAuthenticate request received after successful authentication"))
    try:
        done = await session.authenticate(request.body.auth_bytes)
    except SaslFailed as failed:
        raise CloseConnection(f"SASL authentication failed: {failed}", answer=AUTHENTICATE.Response(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=failed.message, auth_bytes=b"")) from None
    return AUTHENTICATE.Response(error_message=None, auth_bytes=done.token, session_lifetime_ms=done.session_lifetime_ms)
