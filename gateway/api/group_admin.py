"""DescribeGroups, ListGroups and DeleteGroups: the coordinator's groups, for admin clients.

DescribeGroups shows classic groups; ConsumerGroupDescribe (consumer_group.py)
shows KIP-848 consumer groups; ListGroups and DeleteGroups take both.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, allowed_names, authorized_operations
from gateway.api.metadata import NO_OPERATIONS
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.group.classic import ClassicState
from gateway.group.consumer_group import ConsumerGroup
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

DESCRIBE = by_name("DescribeGroups")
LIST = by_name("ListGroups")
DELETE = by_name("DeleteGroups")
GROUP_OPERATIONS = (Operation.READ, Operation.DELETE, Operation.DESCRIBE)  # what Kafka reports of a group
FIRST_NOT_FOUND_VERSION = 6


@handles("DescribeGroups")
async def describe_groups(request: Request, services: Services):
    body, version = request.body, request.version
    return DESCRIBE.Response(groups=[_describe(request, services, group_id, version, body.include_authorized_operations)
                                     for group_id in body.groups])


def _describe(request: Request, services: Services, group_id: str, version: int, with_operations: bool):
    if not allowed(request, services, Operation.DESCRIBE, ResourceType.GROUP, group_id):
        return DESCRIBE.Response.Groups(group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                        authorized_operations=NO_OPERATIONS)
    try:
        group = services.groups.group(group_id)
    except KafkaError as exc:  # coordinated elsewhere, or loading
        return DESCRIBE.Response.Groups(group_id=group_id, error_code=exc.code, authorized_operations=NO_OPERATIONS)
    return described(group, group_id, version, group_operations(request, services, group_id, with_operations))


def group_operations(request: Request, services: Services, group_id: str, wanted: bool) -> int:
    """The group's operations the request may do, as Kafka's bit field, if asked for."""
    if not wanted:
        return NO_OPERATIONS
    return authorized_operations(request, services, ResourceType.GROUP, group_id, GROUP_OPERATIONS)


def described(group, group_id: str, version: int, operations: int):
    Group = DESCRIBE.Response.Groups
    if group is None or isinstance(group, ConsumerGroup):
        # Kafka describes only classic groups here: a consumer group is answered as unknown.
        if version < FIRST_NOT_FOUND_VERSION:
            return Group(group_id=group_id, group_state=ClassicState.DEAD.value, authorized_operations=operations)
        message = f"Group {group_id} not found." if group is None else f"Group {group_id} is not a classic group."
        return Group(group_id=group_id, group_state=ClassicState.DEAD.value, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                     error_message=message, authorized_operations=operations)
    stable = group.is_(ClassicState.STABLE)
    members = [
        Group.Members(member_id=m.member_id, group_instance_id=m.instance_id if version >= 4 else None,
                      client_id=m.client_id, client_host=m.client_host,
                      member_metadata=m.metadata(group.protocol_name) if stable else b"",
                      member_assignment=m.assignment if stable else b"")
        for m in group.members.values()
    ]
    return Group(group_id=group_id, group_state=group.state.value, protocol_type=group.protocol_type or "",
                 protocol_data=(group.protocol_name or "") if stable else "", members=members,
                 authorized_operations=operations)


@handles("ListGroups")
async def list_groups(request: Request, services: Services):
    body, version = request.body, request.version
    states = {s.lower() for s in body.states_filter}
    types = {t.lower() for t in body.types_filter}
    listed = []
    every_group = allowed(request, services, Operation.DESCRIBE, ResourceType.CLUSTER)
    for group_id in services.groups.group_ids():
        if not every_group and not allowed(request, services, Operation.DESCRIBE, ResourceType.GROUP, group_id):
            continue  # Kafka lists the groups the client may describe, or all for DESCRIBE on the cluster
        group = services.groups.group(group_id)
        state = group.state.value
        if (states and state.lower() not in states) or (types and group.group_type not in types):
            continue
        entry = LIST.Response.Groups(group_id=group_id, protocol_type=group.protocol_type or "")
        if version >= 4:
            entry.group_state = state
        if version >= 5:
            entry.group_type = group.group_type
        listed.append(entry)
    return LIST.Response(groups=listed)


@handles("DeleteGroups")
async def delete_groups(request: Request, services: Services):
    names = request.body.groups_names
    deletable = allowed_names(request, services, Operation.DELETE, ResourceType.GROUP, names)
    wanted = [name for name in names if name in deletable]
    errors = dict(zip(wanted, await services.groups.delete_groups(wanted), strict=True))
    return DELETE.Response(results=[
        DELETE.Response.Results(group_id=name, error_code=errors.get(name, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        for name in names])
