"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: membership of classic groups, for who may READ the group."""

from __future__ import annotations

import functools

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import group_id, requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.group.classic import JoinResult, SyncResult
from gateway.group.classic_membership import JoinRequest
from gateway.kafka_error import KafkaError
from gateway.server.answers import Deferred
from gateway.server.dispatch import Request
from protocol.kafka.apis import ALL, by_name

JOIN = by_name("JoinGroup")
SYNC = by_name("SyncGroup")
HEARTBEAT = by_name("Heartbeat")
LEAVE = by_name("LeaveGroup")
FIRST_BATCHED_LEAVE = 3


def coordinator_refusals(handler):
    """A KafkaError of the coordinator (the group is coordinated elsewhere, loading, ...) answered as
    Kafka answers it: the API's response with that error at the top, every other field left empty."""
    @functools.wraps(handler)
    async def answered(request: Request, services: Services):
        try:
            return await handler(request, services)
        except KafkaError as exc:
            return ALL[request.header.api_key].Response(error_code=exc.code)

    return answered


def client_host(request) -> str:
    """The member's address as Kafka shows it: "/" and the IP."""
    return "/" + request.connection.peer.rsplit(":", 1)[0]


def when_ready(reply, answer):
    """The answer now if the reply is complete, else once it is."""
    if reply.ready:
        return answer(reply.value)

    async def wait():
        return answer(await reply.receive())

    return Deferred(wait)


@handles("JoinGroup")
@requires(Operation.READ, ResourceType.GROUP, group_id)
@coordinator_refusals
async def join_group(request: Request, services: Services):
    body, version = request.body, request.version
    join = JoinRequest(
        body.group_id, body.member_id, body.group_instance_id, body.protocol_type,
        [(p.name, p.metadata) for p in body.protocols], body.session_timeout_ms,
        # v0 has no rebalance timeout: the session timeout stands in for it.
        body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
        request.client_id or "", client_host(request), version)
    reply = await services.groups.join(join)
    return when_ready(reply, lambda result: join_response(result, version))


def join_response(result: JoinResult, version: int):
    members = [JOIN.Response.Members(member_id=member_id, group_instance_id=instance if version >= 5 else None,
                                     metadata=metadata)
               for member_id, instance, metadata in result.members]
    response = JOIN.Response(
        error_code=result.error, generation_id=result.generation, protocol_name=result.protocol_name,
        leader=result.leader, member_id=result.member_id, members=members)
    if version >= 7:
        response.protocol_type = result.protocol_type
    elif response.protocol_name is None:
        response.protocol_name = ""  # nullable only from v7
    if version >= 9:
        response.skip_assignment = result.skip_assignment
    return response


@handles("SyncGroup")
@requires(Operation.READ, ResourceType.GROUP, group_id)
@coordinator_refusals
async def sync_group(request: Request, services: Services):
    body, version = request.body, request.version
    reply = await services.groups.sync(
        body.group_id, body.member_id, body.group_instance_id, body.generation_id,
        body.protocol_type, body.protocol_name, {a.member_id: a.assignment for a in body.assignments})
    return when_ready(reply, lambda result: sync_response(result, version))


def sync_response(result: SyncResult, version: int):
    response = SYNC.Response(error_code=result.error, assignment=result.assignment)
    if version >= 5:
        response.protocol_type, response.protocol_name = result.protocol_type, result.protocol_name
    return response


@handles("Heartbeat")
@requires(Operation.READ, ResourceType.GROUP, group_id)
@coordinator_refusals
async def heartbeat(request: Request, services: Services):
    body = request.body
    code = services.groups.heartbeat(body.group_id, body.member_id, body.group_instance_id, body.generation_id)
    return HEARTBEAT.Response(error_code=code)


@handles("LeaveGroup")
@requires(Operation.READ, ResourceType.GROUP, group_id)
async def leave_group(request: Request, services: Services):
    body, version = request.body, request.version
    if version >= FIRST_BATCHED_LEAVE:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id, None)]
    try:
        errors = await services.groups.leave(body.group_id, leaving)
    except KafkaError as exc:
        return LEAVE.Response(error_code=exc.code)
    if version < FIRST_BATCHED_LEAVE:
        return LEAVE.Response(error_code=errors[0])
    return LEAVE.Response(members=[
        LEAVE.Response.Members(member_id=member_id, group_instance_id=instance, error_code=error)
        for (member_id, instance), error in zip(leaving, errors, strict=True)])
