"""The Kafka wire protocol: API schemas as data and one generic codec.

Frames here are whole requests or responses WITHOUT the 4-byte size prefix,
which the I/O layer strips (`FrameReader`). Encoders return a bytearray;
a server's responses come framed, as the buffers to send in order
(`encode_response_pieces`).
"""

from __future__ import annotations

from typing import Any

from protocol.errors import DecodeError, EncodeError
from protocol.kafka.apis import ALL, by_name
from protocol.kafka.buffers import Fragments, GatherBuffer
from protocol.kafka.codec import REQUEST, RESPONSE, decode_body, decoded, encode_body, encode_body_into
from protocol.kafka.error_codes import ErrorCode, is_retriable
from protocol.kafka.framing import SIZE_PREFIX_BYTES
from protocol.kafka.headers import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    peek_request_header,
    write_request_header,
    write_response_header,
)
from protocol.kafka.schema import Api

__all__ = [
    "ALL", "REQUEST", "RESPONSE", "UNKNOWN_API_KEY", "UNSUPPORTED_VERSION", "Api", "DecodeError",
    "EncodeError", "ErrorCode", "Fragments", "RequestHeader", "UnsupportedRequest", "by_name", "decode_body",
    "decode_request", "decode_response", "encode_body", "encode_request", "encode_response",
    "encode_response_pieces",
    "is_retriable", "peek_request_header",
]

UNKNOWN_API_KEY = "unknown api key"
UNSUPPORTED_VERSION = "unsupported api version"


class UnsupportedRequest(DecodeError):
    """A request for an API key or version this broker does not serve.

    `reason` is UNKNOWN_API_KEY or UNSUPPORTED_VERSION; the fields every header
    version shares are kept so the server can still answer.
    """

    def __init__(self, reason: str, api_key: int, api_version: int, correlation_id: int):
        super().__init__(reason, 0)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


def _api(api_key: int, failure: type[ValueError]) -> Api:
    api = ALL.get(api_key)
    if api is None:
        raise failure(f"{UNKNOWN_API_KEY} {api_key}")
    return api


def decode_request(frame) -> tuple[Any, Any]:
    """(RequestHeader, body) of one request frame; bytes after the body are ignored."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    api_key, version, correlation_id = peek_request_header(buf)
    api = ALL.get(api_key)
    if api is None:
        raise UnsupportedRequest(UNKNOWN_API_KEY, api_key, version, correlation_id)
    if version not in api.version_range:
        raise UnsupportedRequest(UNSUPPORTED_VERSION, api_key, version, correlation_id)
    header_version = api.request_header_version(version)
    header, pos = decoded("request header", decode_request_header, buf, header_version)
    body, _ = decode_body(api, version, REQUEST, buf, pos)
    return header, body


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body) -> bytearray:
    api = _api(api_key, EncodeError)
    out = bytearray()
    write_request_header(out, api.request_header_version(version), api_key, version,
                         correlation_id, client_id)
    encode_body_into(out, api, version, REQUEST, body)
    return out


def encode_response(api_key: int, version: int, correlation_id: int, body) -> bytearray:
    """The response in one buffer, without the stream's size prefix."""
    out = bytearray()
    _encode_response_into(out, api_key, version, correlation_id, body)
    return out


def encode_response_pieces(api_key: int, version: int, correlation_id: int, body) -> list:
    """The framed response as buffers to send in order: record data given as
    `Fragments` is among them by reference, never copied. The size prefix is
    written in the space left for it, so no piece is copied to frame it."""
    out = GatherBuffer(SIZE_PREFIX_BYTES)
    _encode_response_into(out, api_key, version, correlation_id, body)
    out[:SIZE_PREFIX_BYTES] = (out.total_bytes - SIZE_PREFIX_BYTES).to_bytes(SIZE_PREFIX_BYTES, "big")
    return out.pieces()


def _encode_response_into(out: bytearray, api_key: int, version: int, correlation_id: int, body) -> None:
    api = _api(api_key, EncodeError)
    write_response_header(out, api.response_header_version(version), correlation_id)
    encode_body_into(out, api, version, RESPONSE, body)


def decode_response(api_key: int, version: int, frame) -> tuple[int, Any]:
    """(correlation_id, body) of one response frame."""
    api = _api(api_key, DecodeError)
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    header_version = api.response_header_version(version)
    header, pos = decoded("response header", decode_response_header, buf, header_version)
    body, _ = decode_body(api, version, RESPONSE, buf, pos)
    return header.correlation_id, body
