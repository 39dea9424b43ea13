"""Hypothesis strategies derived from the API declarations themselves.

`message(cls, version, flexible)` draws a message valid for that version:
fields the version lacks keep their defaults, null appears only where the
field is nullable, tagged fields take any value (default or not).
"""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from protocol.kafka.message_classes import camel
from protocol.kafka.schema import Field

INTEGER_BOUNDS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
}
SCALARS = {
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "uuid": st.uuids(),
    "string": st.text(max_size=6),
    "bytes": st.binary(max_size=6),
    "records": st.binary(max_size=12),
    **{name: st.integers(low, high) for name, (low, high) in INTEGER_BOUNDS.items()},
}


def field_value(field: Field, owner: type, version: int, flexible: bool) -> st.SearchStrategy:
    if field.type == "[]":
        child = getattr(owner, camel(field.name))
        value = st.lists(message(child, version, flexible), max_size=2)
    elif field.type == "struct":
        value = message(getattr(owner, camel(field.name)), version, flexible)
    elif field.type.startswith("[]"):
        value = st.lists(SCALARS[field.type[2:]], max_size=3)
    else:
        value = SCALARS[field.type]
    if version in field.nullable_range or field.type == "records":
        value = st.none() | value
    return value


@cache
def message(cls: type, version: int, flexible: bool) -> st.SearchStrategy:
    present = {
        field.name: field_value(field, cls, version, flexible)
        for field in cls._fields
        if version in field.version_range
    }
    return st.fixed_dictionaries(present).map(lambda kwargs: cls(**kwargs))
