"""The authorizer's decisions, as Kafka's StandardAuthorizer makes them; pure logic over a set of bindings.

A request is allowed for a super user; else, when no ACL at all applies to
the resource, as `allow.everyone.if.no.acl.found` says; else if no DENY
applies to the principal, host and operation and an ALLOW does. An ACL
applies to a resource through its LITERAL name, the LITERAL `*`, or a
PREFIXED name the resource's starts with; to a principal by its name or
`User:*`; to a host by the peer's address or `*`; to an operation by the
operation itself or ALL, and an ALLOW also through Kafka's implications
(READ, WRITE, DELETE or ALTER allow DESCRIBE; ALTER_CONFIGS allows
DESCRIBE_CONFIGS).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.acls.model import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

IMPLIED_BY = {  # the operations whose ALLOW also allows the key
    Operation.DESCRIBE: {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER},
    Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS},
}
# Kafka's authorizeByResourceType asks first about a resource nobody names.
UNNAMED_RESOURCE = "hardcode"


@dataclass(frozen=True)
class Policy:
    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False


@dataclass(frozen=True)
class Who:
    principal: str  # "User:alice"
    host: str  # the peer's IP address


class AclSet:
    """The bindings, indexed by what a decision looks up: resource type and name."""

    def __init__(self, bindings: Iterable[AclBinding] = ()):
        self._literal: dict[tuple[ResourceType, str], set[AclBinding]] = defaultdict(set)
        self._prefixed: dict[ResourceType, set[AclBinding]] = defaultdict(set)
        for binding in bindings:
            self.add(binding)

    def __iter__(self):
        for bindings in (*self._literal.values(), *self._prefixed.values()):
            yield from bindings

    def __contains__(self, binding: AclBinding) -> bool:
        return binding in self._where(binding)

    def add(self, binding: AclBinding) -> None:
        self._where(binding).add(binding)

    def discard(self, binding: AclBinding) -> None:
        self._where(binding).discard(binding)

    def _where(self, binding: AclBinding) -> set[AclBinding]:
        if binding.pattern_type == PatternType.PREFIXED:
            return self._prefixed[binding.resource_type]
        return self._literal[(binding.resource_type, binding.name)]

    def applying_to(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern covers the resource."""
        return [*self._literal.get((resource_type, name), ()), *self._literal.get((resource_type, WILDCARD), ()),
                *(b for b in self._prefixed.get(resource_type, ()) if name.startswith(b.name))]

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        return [b for b in self if b.resource_type == resource_type]


def _concerns(binding: AclBinding, who: Who) -> bool:
    return binding.principal in (who.principal, WILDCARD_PRINCIPAL) and binding.host in (who.host, WILDCARD)


def _denies(binding: AclBinding, who: Who, operation: Operation) -> bool:
    return (binding.permission == Permission.DENY and binding.operation in (operation, Operation.ALL)
            and _concerns(binding, who))


def _allows(binding: AclBinding, who: Who, operation: Operation) -> bool:
    granting = {operation, Operation.ALL, *IMPLIED_BY.get(operation, ())}
    return binding.permission == Permission.ALLOW and binding.operation in granting and _concerns(binding, who)


def authorize(acls: AclSet, policy: Policy, who: Who, operation: Operation, resource_type: ResourceType,
              name: str) -> bool:
    """Whether `who` may do `operation` to the resource."""
    if who.principal in policy.super_users:
        return True
    applying = acls.applying_to(resource_type, name)
    if not applying:
        return policy.allow_if_no_acl
    if any(_denies(b, who, operation) for b in applying):
        return False
    return any(_allows(b, who, operation) for b in applying)


def authorize_any(acls: AclSet, policy: Policy, who: Who, operation: Operation,
                  resource_type: ResourceType) -> bool:
    """Whether `who` may do `operation` to some resource of the type (Kafka's authorizeByResourceType,
    KIP-679): an ALLOW for it that no DENY of the principal covers whole."""
    if authorize(acls, policy, who, operation, resource_type, UNNAMED_RESOURCE):
        return True
    bindings = acls.of_type(resource_type)
    denied = [b for b in bindings if _denies(b, who, operation)]
    if any(b.pattern_type == PatternType.LITERAL and b.name == WILDCARD for b in denied):
        return False
    names = {b.name for b in denied if b.pattern_type == PatternType.LITERAL}
    prefixes = [b.name for b in denied if b.pattern_type == PatternType.PREFIXED]
    return any(_allows(b, who, operation) and _left_open(b, names, prefixes) for b in bindings)


def _left_open(allow: AclBinding, denied_names: set[str], denied_prefixes: list[str]) -> bool:
    """Whether some resource an ALLOW covers is covered by none of the DENYs."""
    if allow.pattern_type == PatternType.LITERAL and allow.name == WILDCARD:
        return True
    if any(allow.name.startswith(prefix) for prefix in denied_prefixes):
        return False
    return allow.pattern_type == PatternType.PREFIXED or allow.name not in denied_names
