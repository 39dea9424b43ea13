"""DescribeGroups, ListGroups and DeleteGroups: the coordinator's groups, for admin clients.

DescribeGroups shows classic groups; ConsumerGroupDescribe (consumer_group.py)
shows KIP-848 consumer groups; ListGroups and DeleteGroups take both.
"""

from __future__ import annotations

from gateway.api.metadata import NO_OPERATIONS
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.group.classic import ClassicState
from gateway.group.consumer_group import ConsumerGroup
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

DESCRIBE = by_name("DescribeGroups")
LIST = by_name("ListGroups")
DELETE = by_name("DeleteGroups")
# READ, DELETE, DESCRIBE: what Kafka reports of a group to an authorized client.
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))
FIRST_NOT_FOUND_VERSION = 6


@handles("DescribeGroups")
async def describe_groups(request: Request, services: Services):
    body, version = request.body, request.version
    operations = GROUP_OPERATIONS if body.include_authorized_operations else NO_OPERATIONS
    return DESCRIBE.Response(groups=[
        described(services.groups.group(group_id), group_id, version, operations) for group_id in body.groups])


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
    for group_id in services.groups.group_ids():
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
    errors = await services.groups.delete_groups(names)
    return DELETE.Response(results=[
        DELETE.Response.Results(group_id=name, error_code=error) for name, error in zip(names, errors, strict=True)])
