"""Message classes generated from the declarations, one per struct.

`api.Request` and `api.Response` are the top-level classes; a nested struct's
class hangs off its parent under the CamelCase field name, so
`Metadata.Response.Topics.Partitions(partition_index=0)` builds a partition.
Every field the keyword constructor is not given takes its default.
"""

from __future__ import annotations

from typing import Any

from protocol.kafka.primitives import ZERO_UUID
from protocol.kafka.schema import NO_DEFAULT, Api, Field

ZERO_VALUES = {
    "bool": False, "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0,
    "uint32": 0, "float64": 0.0, "uuid": ZERO_UUID, "string": "", "bytes": b"",
    "records": None,
}
INTEGER_TYPES = frozenset("int8 int16 int32 int64 uint16 uint32".split())


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def is_struct(field: Field) -> bool:
    return field.type in ("[]", "struct")


def declared_default(field: Field) -> Any:
    """The declared default as a value of the field's type, or NO_DEFAULT."""
    default = field.default
    # Kafka's JSON writes numeric defaults as strings ("-1", "0x7fffffff").
    if isinstance(default, str) and field.type in INTEGER_TYPES:
        return int(default, 0)
    return default


def default_source(field: Field, owner: type, namespace: dict[str, Any]) -> str:
    """A Python expression that builds the field's default afresh.

    Immutable defaults are shared through `namespace`; lists and structs are
    built anew each time so that no two messages share a mutable default.
    """
    default = declared_default(field)
    if default is None:
        return "None"
    if field.type.startswith("[]"):
        if default is NO_DEFAULT:
            return "[]"
        namespace[f"_d_{field.name}"] = tuple(default)
        return f"list(_d_{field.name})"
    if field.type == "struct":
        namespace[f"_c_{field.name}"] = getattr(owner, camel(field.name))
        return f"_c_{field.name}()"
    namespace[f"_d_{field.name}"] = ZERO_VALUES[field.type] if default is NO_DEFAULT else default
    return f"_d_{field.name}"


def default_value(field: Field, owner: type) -> Any:
    namespace: dict[str, Any] = {}
    return eval(default_source(field, owner, namespace), namespace)


class Message:
    """Base of the generated classes: equality and repr over the fields."""

    __slots__ = ("_unknown_tags",)
    _fields: tuple[Field, ...] = ()
    _names: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._names) and (
            self._unknown_tags == other._unknown_tags
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"{type(self).__name__}({inner})"


def _init_source(cls: type, namespace: dict[str, Any]) -> str:
    """The source of a keyword-only __init__; `_M` marks an omitted list or struct."""
    params, body = [], []
    for field in cls._fields:
        expr = default_source(field, cls, namespace)
        if expr.startswith("_d_") or expr == "None":
            params.append(f"{field.name}={expr}")
            body.append(f"    self.{field.name} = {field.name}")
        else:
            params.append(f"{field.name}=_M")
            body.append(f"    self.{field.name} = {expr} if {field.name} is _M else {field.name}")
    body.append("    self._unknown_tags = None")
    signature = f"def __init__(self, *, {', '.join(params)}):" if params else "def __init__(self):"
    return "\n".join([signature, *body])


def build_class(name: str, qualname: str, fields: tuple[Field, ...]) -> type:
    cls = type(name, (Message,), {
        "__slots__": tuple(f.name for f in fields),
        "_fields": fields,
        "_names": tuple(f.name for f in fields),
        "__qualname__": qualname,
        "__module__": __name__,
    })
    for field in fields:
        if is_struct(field):
            child = build_class(camel(field.name), f"{qualname}.{camel(field.name)}", field.fields)
            setattr(cls, camel(field.name), child)
    namespace: dict[str, Any] = {"_M": object()}
    exec(_init_source(cls, namespace), namespace)  # noqa: S102 - our own generated source
    cls.__init__ = namespace["__init__"]
    return cls


def message_classes(api: Api) -> tuple[type, type]:
    """(Request, Response) classes of `api`, built on first use and kept on it."""
    classes = api.__dict__.get("_message_classes")
    if classes is None:
        classes = (
            build_class(f"{api.name}Request", f"{api.name}Request", api.request),
            build_class(f"{api.name}Response", f"{api.name}Response", api.response),
        )
        object.__setattr__(api, "_message_classes", classes)
    return classes
