"""Kafka's ACL model: resource patterns, access control entries, and the filters over them.

The numbers are Kafka's wire codes (ResourceType, PatternType, AclOperation,
AclPermissionType); the filters match as Kafka's ResourcePatternFilter and
AccessControlEntryFilter do.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"  # a LITERAL resource name, or a host, that matches every one
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not (permission) do what (operation) to a resource pattern."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @property
    def pattern(self) -> tuple[ResourceType, str, PatternType]:
        return self.resource_type, self.name, self.pattern_type

    def as_list(self) -> list:
        return _as_list(self)

    @classmethod
    def from_list(cls, fields: list) -> AclBinding:
        return cls(*_typed(fields))


@dataclass(frozen=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select: None and ANY match every value."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    def as_list(self) -> list:
        return _as_list(self)

    @classmethod
    def from_list(cls, fields: list) -> AclFilter:
        return cls(*_typed(fields))

    def has_unknown(self) -> bool:
        return UNKNOWN_CODE in (self.resource_type, self.pattern_type, self.operation, self.permission)

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, binding.pattern_type):
            return self.name == binding.name
        # MATCH: the patterns that would apply to a resource of this name
        if binding.pattern_type == PatternType.LITERAL:
            return binding.name in (self.name, WILDCARD)
        return self.name.startswith(binding.name)

    def _matches_entry(self, binding: AclBinding) -> bool:
        return (self.principal in (None, binding.principal) and self.host in (None, binding.host)
                and self.operation in (Operation.ANY, binding.operation)
                and self.permission in (Permission.ANY, binding.permission))


UNKNOWN_CODE = 0  # UNKNOWN in each of the four enumerations


def _as_list(selected: AclBinding | AclFilter) -> list:
    """A binding's or filter's fields as journal entries and CHP keys hold them."""
    return [selected.resource_type, selected.name, selected.pattern_type, selected.principal, selected.host,
            selected.operation, selected.permission]


def _typed(fields: list) -> tuple:
    kind, name, pattern, principal, host, operation, permission = fields
    return ResourceType(kind), name, PatternType(pattern), principal, host, Operation(operation), Permission(permission)


def coded(enum: type[IntEnum], value: int):
    """The member of a Kafka enumeration a wire code stands for, UNKNOWN for a code it lacks."""
    try:
        return enum(value)
    except ValueError:
        return enum(UNKNOWN_CODE)


def invalid_binding(binding: AclBinding) -> str | None:
    """Why CreateAcls refuses a binding (Kafka's messages, INVALID_REQUEST), None if it does not."""
    if binding.resource_type == ResourceType.CLUSTER and binding.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.name:
        return "Invalid empty resource name specified"
    principal_type, _, principal_name = binding.principal.partition(":")
    if not (principal_type and principal_name):
        return f"expected a string in format principalType:principalName but got {binding.principal}"
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type.name}"
    if binding.operation in (Operation.UNKNOWN, Operation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {binding.permission.name}"
    return None
