"""GetTelemetrySubscriptions and PushTelemetry (KIP-714): served, not advertised.

As a default Kafka broker (no metrics reporter implementing ClientTelemetry),
the gateway leaves both APIs out of ApiVersions (ApiVersionsResponse.filterApis),
so clients never ask; but the APIs stay enabled on the request path (Kafka's
isApiEnabled looks at the listener and version only), and a client that asks
anyway is answered as Kafka's ClientMetricsManager answers without any
client-metrics subscription: an empty list of requested metrics, Kafka's
default push interval (5 minutes) and its accepted codecs. A push is checked
as Kafka checks it and dropped. Nothing is kept per client: the subscription
id is derived from the client instance id.
"""

from __future__ import annotations

import uuid
import zlib

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

GET = by_name("GetTelemetrySubscriptions")
PUSH = by_name("PushTelemetry")
PUSH_INTERVAL_MS = 300000  # Kafka's interval.ms of a client-metrics subscription
NO_COMPRESSION = 0
ACCEPTED_COMPRESSION = (4, 3, 1, 2)  # zstd, lz4, gzip, snappy: Kafka's order of preference


def subscription_id(client_instance_id: uuid.UUID) -> int:
    """The same id for every request of a client instance, as an int32."""
    unsigned = zlib.crc32(client_instance_id.bytes + str(PUSH_INTERVAL_MS).encode())
    return unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned


def telemetry_max_bytes(services: Services) -> int:
    return int(services.broker_configs.get("telemetry.max.bytes").value)


@handles("GetTelemetrySubscriptions", advertised=False)
async def get_telemetry_subscriptions(request: Request, services: Services):
    instance = request.body.client_instance_id
    if instance.int == 0:
        instance = uuid.uuid4()
    return GET.Response(client_instance_id=instance, subscription_id=subscription_id(instance),
                        accepted_compression_types=list(ACCEPTED_COMPRESSION), push_interval_ms=PUSH_INTERVAL_MS,
                        telemetry_max_bytes=telemetry_max_bytes(services), delta_temporality=True,
                        requested_metrics=[])


@handles("PushTelemetry", advertised=False)
async def push_telemetry(request: Request, services: Services):
    return PUSH.Response(error_code=_push_error(request.body, services))


def _push_error(push, services: Services) -> ErrorCode:
    if push.client_instance_id.int == 0:
        return ErrorCode.INVALID_REQUEST
    if push.subscription_id != subscription_id(push.client_instance_id):
        return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    if push.compression_type not in (NO_COMPRESSION, *ACCEPTED_COMPRESSION):
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if len(push.metrics) > telemetry_max_bytes(services):
        return ErrorCode.TELEMETRY_TOO_LARGE
    return ErrorCode.NONE
