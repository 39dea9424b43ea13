"""DescribeAcls, CreateAcls, DeleteAcls: answered as by a Kafka broker without an authorizer.

The gateway authorizes nothing yet (no `authorizer.class.name` in Kafka's
terms), so, like Kafka then, it serves the ACL APIs and fails each with
SECURITY_DISABLED: admin tools learn that ACLs are off, not that the
broker is too old for them.
"""

from __future__ import annotations

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

DESCRIBE, CREATE, DELETE = by_name("DescribeAcls"), by_name("CreateAcls"), by_name("DeleteAcls")
# Kafka's own messages: describe says where, create and delete do not.
DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"
CHANGE_MESSAGE = "No Authorizer is configured."


@handles("DescribeAcls")
async def describe_acls(request: Request, services: Services):
    return DESCRIBE.Response(error_code=ErrorCode.SECURITY_DISABLED, error_message=DESCRIBE_MESSAGE, resources=[])


@handles("CreateAcls")
async def create_acls(request: Request, services: Services):
    result = CREATE.Response.Results
    return CREATE.Response(results=[
        result(error_code=ErrorCode.SECURITY_DISABLED, error_message=CHANGE_MESSAGE)
        for _ in request.body.creations])


@handles("DeleteAcls")
async def delete_acls(request: Request, services: Services):
    result = DELETE.Response.FilterResults
    return DELETE.Response(filter_results=[
        result(error_code=ErrorCode.SECURITY_DISABLED, error_message=CHANGE_MESSAGE, matching_acls=[])
        for _ in request.body.filters])
