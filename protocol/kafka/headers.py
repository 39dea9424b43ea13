"""Request and response headers.

Request header v1 is api_key, api_version, correlation_id and a nullable
client_id; v2 adds a tagged-field section. The client_id stays a classic
int16-prefixed string even in v2, so headers are coded here by hand rather
than by the generic codec. Response header v0 is the correlation_id alone;
v1 adds a tagged-field section.
"""

from __future__ import annotations

import struct

from protocol.errors import DecodeError
from protocol.kafka import primitives as p
from protocol.kafka.codec import read_tags
from protocol.kafka.message_classes import build_class
from protocol.kafka.schema import F

RequestHeader = build_class("RequestHeader", "RequestHeader", (
    F("api_key", "int16"),
    F("api_version", "int16"),
    F("correlation_id", "int32"),
    F("client_id", "string", "1+", nullable="1+"),
))
ResponseHeader = build_class("ResponseHeader", "ResponseHeader", (F("correlation_id", "int32"),))

REQUEST_PREFIX = struct.Struct(">hhi")
CORRELATION_ID = struct.Struct(">i")
NO_TAGS: dict = {}
read_client_id = p.blob_reader("string", compact=False, nullable=True)
write_client_id = p.blob_writer("string", compact=False, nullable=True)


def peek_request_header(frame) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the part every header version shares."""
    if len(frame) < REQUEST_PREFIX.size:
        raise DecodeError("request shorter than its header", len(frame))
    return REQUEST_PREFIX.unpack_from(frame, 0)


def decode_request_header(buf, header_version: int) -> tuple[object, int]:
    """The header at the start of `buf` and where the body begins."""
    header = RequestHeader()
    header.api_key, header.api_version, header.correlation_id = peek_request_header(buf)
    pos = REQUEST_PREFIX.size
    if header_version >= 1:
        header.client_id, pos = read_client_id(buf, pos)
    if header_version >= 2:
        pos = read_tags(buf, pos, header, NO_TAGS)
    return header, pos


def write_request_header(out: bytearray, header_version: int, api_key: int, version: int,
                         correlation_id: int, client_id: str | None) -> None:
    out += REQUEST_PREFIX.pack(api_key, version, correlation_id)
    if header_version >= 1:
        write_client_id(out, client_id)
    if header_version >= 2:
        out.append(0)


def decode_response_header(buf, header_version: int) -> tuple[object, int]:
    """The header at the start of `buf` and where the body begins."""
    header = ResponseHeader()
    header.correlation_id = CORRELATION_ID.unpack_from(buf, 0)[0]
    pos = CORRELATION_ID.size
    if header_version >= 1:
        pos = read_tags(buf, pos, header, NO_TAGS)
    return header, pos


def write_response_header(out: bytearray, header_version: int, correlation_id: int) -> None:
    out += CORRELATION_ID.pack(correlation_id)
    if header_version >= 1:
        out.append(0)

