"""Quota entities and keys, checked as Kafka checks them (KIP-546).

An entity is a user, a client id, both, or an IP address; a None name is the
default entity of its type. Kafka answers a bad entity, key or value with
INVALID_REQUEST and the messages used here.
"""

from __future__ import annotations

import ipaddress

from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

USER, CLIENT_ID, IP = "user", "client-id", "ip"
Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs sorted by type

PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
INTEGRAL_KEYS = {PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONNECTION_CREATION_RATE}
CLIENT_KEYS = {PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE}
IP_KEYS = {CONNECTION_CREATION_RATE}
LIMITS = {CONNECTION_CREATION_RATE: (2**31 - 1, "an INT"), PRODUCER_BYTE_RATE: (2**63 - 1, "a LONG"),
          CONSUMER_BYTE_RATE: (2**63 - 1, "a LONG")}


def invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, message)


def checked_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """The entity of `pairs` (type, name), or INVALID_REQUEST."""
    if not pairs:
        raise invalid("Invalid empty client quota entity")
    types = [entity_type for entity_type, _ in pairs]
    if len(set(types)) != len(types):
        raise invalid(f"Invalid quota entity: duplicate entity types {sorted(types)}")
    for entity_type, name in pairs:
        if entity_type not in (USER, CLIENT_ID, IP):
            raise invalid(f"Unhandled client quota entity type: {entity_type}")
        if entity_type == IP and name is not None:
            _check_ip(name)
    if IP in types and len(types) > 1:
        raise invalid("Invalid quota entity combination, IP quota should not be combined with User or ClientId")
    return tuple(sorted(pairs))


def _check_ip(name: str) -> None:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        raise invalid(f"{name} is not a valid IP or resolvable host.") from None


def check_value(entity: Entity, key: str, value: float | None) -> None:
    """INVALID_REQUEST unless `key` is a quota of the entity's kind and `value` (None: the
    quota's removal) fits its type."""
    keys = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in keys:
        raise invalid(f"Invalid configuration key {key}")
    if value is not None and key in INTEGRAL_KEYS:
        limit, type_name = LIMITS[key]
        if value > limit:
            raise invalid(f"Proposed value for {key} is too large for {type_name}.")
        if abs(value % 1.0) > 1e-6:
            raise invalid(f"{key} cannot be a fractional value.")


def describe_filter(components: list[tuple[str, int, str | None]]) -> tuple[dict[str, str | None], set[str]]:
    """A DescribeClientQuotas filter as (names to match exactly, None for the default; types to
    match with any name), or INVALID_REQUEST."""
    exact: dict[str, str | None] = {}
    any_name: set[str] = set()
    for entity_type, match_type, match in components:
        if entity_type in exact or entity_type in any_name:
            raise invalid(f"Duplicate {entity_type} filter component entity type")
        if entity_type not in (USER, CLIENT_ID, IP):
            raise invalid(f"Custom entity type '{entity_type}' not supported")
        if match_type == 0 and match is not None:
            exact[entity_type] = match
        elif match_type == 1 and match is None:
            exact[entity_type] = None
        elif match_type == 2 and match is None:
            any_name.add(entity_type)
        else:
            raise invalid(f"Unknown match type {match_type} or match {match!r} for it")
    if IP in exact.keys() | any_name and len(exact) + len(any_name) > 1:
        raise invalid("Invalid entity filter component combination, IP filter component should not be used "
                      "with user or clientId filter component.")
    return exact, any_name


def matches(entity: Entity, exact: dict[str, str | None], any_name: set[str], strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(any_name):
        return False
    return (all(t in names and names[t] == name for t, name in exact.items())
            and all(t in names for t in any_name))
