"""The generic codec: declarations compiled into straight-line Python.

For one (struct, version) the compiler writes the source of a decoder and an
encoder with every version decision already taken, merges runs of
fixed-width fields into one precompiled struct.Struct, and execs it once.
Lists, strings and nested structs go through the readers and writers of
`primitives`. Compiled codecs are cached on the Api object.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from protocol.errors import DecodeError, EncodeError
from protocol.kafka import primitives as p
from protocol.kafka.message_classes import camel, default_source, default_value, is_struct, message_classes
from protocol.kafka.schema import Api, Field

REQUEST = "request"
RESPONSE = "response"

# What a short or malformed input can make the generated code raise besides
# DecodeError (a fixed-width read past the end raises struct.error).
DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError)
ENCODE_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError)


@dataclass(frozen=True)
class StructCodec:
    decode: Callable[[Any, int], tuple[Any, int]]
    encode: Callable[[bytearray, Any], None]


def read_tags(buf, pos: int, obj, known: dict[int, tuple[str, p.Reader]]) -> int:
    """Read a tagged-field section into `obj`; unknown tags are kept raw."""
    count, pos = p.read_uvarint(buf, pos)
    unknown = None
    for _ in range(count):
        tag, pos = p.read_uvarint(buf, pos)
        size, pos = p.read_uvarint(buf, pos)
        end = p.take(buf, pos, size)
        entry = known.get(tag)
        if entry is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = bytes(buf[pos:end])
        else:
            # The field must fill its declared size exactly, no more, no less.
            value, after = entry[1](buf[:end], pos)
            if after != end:
                raise DecodeError(f"tagged field {entry[0]} is shorter than its size", pos)
            setattr(obj, entry[0], value)
        pos = end
    if unknown:
        obj._unknown_tags = unknown
    return pos


def write_tags(out: bytearray, obj, tagged: tuple[tuple[int, str, Any, p.Writer], ...]) -> None:
    """Write the non-default tagged fields and the kept unknown ones, by tag."""
    entries = []
    for tag, name, default, write in tagged:
        value = getattr(obj, name, default)
        if value != default:
            body = bytearray()
            write(body, value)
            entries.append((tag, body))
    unknown = getattr(obj, "_unknown_tags", None)
    if unknown:
        entries.extend(unknown.items())
        entries.sort(key=itemgetter(0))
    p.write_uvarint(out, len(entries))
    for tag, body in entries:
        p.write_uvarint(out, tag)
        p.write_uvarint(out, len(body))
        out += body


def nullable_struct(codec: StructCodec) -> tuple[p.Reader, p.Writer]:
    """A struct field that may be null travels behind an int8: -1 null, 1 present."""

    def read(buf, pos):
        if p.INT8.unpack_from(buf, pos)[0] < 0:
            return None, pos + 1
        return codec.decode(buf, pos + 1)

    def write(out, value):
        if value is None:
            out.append(0xFF)
        else:
            out.append(1)
            codec.encode(out, value)

    return read, write


class _Compiler:
    """Compiles the structs of one Api direction at one version."""

    def __init__(self, version: int, flexible: bool):
        self.version = version
        self.flexible = flexible

    def field_codec(self, field: Field, owner: type) -> tuple[p.Reader, p.Writer]:
        nullable = self.version in field.nullable_range or field.type == "records"
        if is_struct(field):
            child = self.struct(getattr(owner, camel(field.name)))
            if field.type == "struct":
                return nullable_struct(child) if nullable else (child.decode, child.encode)
            element: tuple[p.Reader, p.Writer] = (child.decode, child.encode)
        elif field.type.startswith("[]"):
            element = p.scalar_codec(field.type[2:], self.flexible, nullable=False)
        else:
            return p.scalar_codec(field.type, self.flexible, nullable)
        fixed = p.FIXED_CODES.get(field.type[2:])
        return (
            p.array_reader(element[0], self.flexible, nullable, fixed),
            p.array_writer(element[1], self.flexible, nullable, fixed),
        )

    def placement(self, field: Field) -> str:
        """Where the field travels in this version: absent, tagged or inline."""
        if self.version not in field.version_range:
            return "absent"
        if self.version in field.tagged_range:
            if not self.flexible:
                raise ValueError(f"{field.name}: tagged in non-flexible version {self.version}")
            return "tagged"
        return "inline"

    def struct(self, cls: type) -> StructCodec:
        ns: dict[str, Any] = {
            "_cls": cls, "_new": object.__new__, "_read_tags": read_tags,
            "_write_tags": write_tags, "_EncodeError": EncodeError,
        }
        dec = ["def decode(buf, pos):", "    o = _new(_cls)"]
        enc = ["def encode(out, o):"]
        run: list[Field] = []
        tagged = []
        for field in cls._fields:
            where = self.placement(field)
            if where == "inline" and field.type in p.FIXED_CODES:
                run.append(field)
                continue
            self.flush_run(run, ns, dec, enc)
            if where == "inline":
                ns[f"_r_{field.name}"], ns[f"_w_{field.name}"] = self.field_codec(field, cls)
                dec.append(f"    o.{field.name}, pos = _r_{field.name}(buf, pos)")
                enc.append(f"    _w_{field.name}(out, o.{field.name})")
                continue
            dec.append(f"    o.{field.name} = {default_source(field, cls, ns)}")
            if where == "tagged":
                reader, writer = self.field_codec(field, cls)
                tagged.append((field.tag, field.name, default_value(field, cls), reader, writer))
            elif not field.ignorable:
                ns[f"_v_{field.name}"] = default_value(field, cls)
                enc += [
                    f"    if getattr(o, {field.name!r}, _v_{field.name}) != _v_{field.name}:",
                    f"        raise _EncodeError('{cls.__qualname__}.{field.name} is not in"
                    f" version {self.version}')",
                ]
        self.flush_run(run, ns, dec, enc)
        dec.append("    o._unknown_tags = None")
        if self.flexible:
            self.tag_section(tagged, ns, dec, enc)
        dec.append("    return o, pos")
        if len(enc) == 1:
            enc.append("    pass")
        exec("\n".join(dec) + "\n" + "\n".join(enc), ns)  # noqa: S102 - our own generated source
        return StructCodec(ns["decode"], ns["encode"])

    @staticmethod
    def flush_run(run: list[Field], ns: dict[str, Any], dec: list[str], enc: list[str]) -> None:
        """Emit one struct.Struct call for a run of inline fixed-width fields."""
        if not run:
            return
        layout = struct.Struct(">" + "".join(p.FIXED_CODES[f.type] for f in run))
        key = f"_s_{run[0].name}"
        ns[key + "_unpack"], ns[key + "_pack"] = layout.unpack_from, layout.pack
        targets = "".join(f"o.{f.name}, " for f in run)
        dec.append(f"    {targets}= {key}_unpack(buf, pos)")
        dec.append(f"    pos += {layout.size}")
        enc.append(f"    out += {key}_pack({targets})")
        run.clear()

    @staticmethod
    def tag_section(tagged: list, ns: dict[str, Any], dec: list[str], enc: list[str]) -> None:
        tagged.sort(key=itemgetter(0))
        ns["_known_tags"] = {tag: (name, reader) for tag, name, _, reader, _ in tagged}
        ns["_tagged"] = tuple((tag, name, default, writer) for tag, name, default, _, writer in tagged)
        # Nearly every section is empty: one zero byte, handled inline.
        dec += [
            "    if buf[pos] == 0:",
            "        pos += 1",
            "    else:",
            "        pos = _read_tags(buf, pos, o, _known_tags)",
        ]
        if tagged:
            enc.append("    _write_tags(out, o, _tagged)")
        else:
            enc += [
                "    if getattr(o, '_unknown_tags', None):",
                "        _write_tags(out, o, ())",
                "    else:",
                "        out.append(0)",
            ]


def struct_codec(cls: type, version: int, flexible: bool) -> StructCodec:
    """The compiled codec of a message class in one version (not cached)."""
    return _Compiler(version, flexible).struct(cls)


def body_codec(api: Api, direction: str, version: int) -> StructCodec:
    """The compiled codec of one body, built on first use and kept on `api`."""
    cache = api.__dict__.get("_body_codecs")
    if cache is None:
        cache = {}
        object.__setattr__(api, "_body_codecs", cache)
    codec = cache.get((direction, version))
    if codec is None:
        if version not in api.version_range:
            raise ValueError(f"{api.name} has no version {version}")
        request_class, response_class = message_classes(api)
        cls = request_class if direction == REQUEST else response_class
        codec = struct_codec(cls, version, version in api.flexible_range)
        cache[(direction, version)] = codec
    return codec


def decoded(what: str, decode: Callable, *args):
    """`decode(*args)`, with any failure of malformed input as DecodeError."""
    try:
        return decode(*args)
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise DecodeError(f"malformed {what}: {exc}") from None


def decode_body(api: Api, version: int, direction: str, frame, pos: int = 0) -> tuple[Any, int]:
    """Decode one body from `frame` at `pos`; returns (message, end position).

    `records` fields come back as views into `frame`, which must therefore
    not be changed while the message is in use.
    """
    codec = body_codec(api, direction, version)
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    return decoded(api.name, codec.decode, buf, pos)


def encode_body_into(out: bytearray, api: Api, version: int, direction: str, body) -> None:
    codec = body_codec(api, direction, version)
    try:
        codec.encode(out, body)
    except EncodeError:
        raise
    except ENCODE_FAILURES as exc:
        raise EncodeError(f"cannot encode {api.name} {direction} v{version}: {exc}") from exc


def encode_body(api: Api, version: int, direction: str, body) -> bytearray:
    out = bytearray()
    encode_body_into(out, api, version, direction, body)
    return out
