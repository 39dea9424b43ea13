"""Feature flags (KIP-584): the features ApiVersions reports and UpdateFeatures, which changes them.

UpdateFeatures is answered as Kafka 4.0's controller answers it (brokers
forward it there, as gateways forward it to theirs): ALTER on the cluster,
then every update checked, the first refusal failing them all with its
message at the top; v0 and v1 list each feature's outcome when all succeed.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.features.levels import SUPPORTED, Update
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API_VERSIONS = by_name("ApiVersions")
UPDATE = by_name("UpdateFeatures")
FIRST_LEVEL_0_VERSION = 4  # ApiVersions versions whose clients read a supported minimum of 0 (KAFKA-17011)
FIRST_UNLISTED_RESULTS_VERSION = 2


def supported_features(version: int) -> list:
    """The features this gateway supports at a level above 0, those whose range starts at 0 left
    out for clients older than ApiVersions v4, whose parsers refuse such a range."""
    Key = API_VERSIONS.Response.SupportedFeatures
    return [Key(name=f.name, min_version=f.low, max_version=f.high) for f in SUPPORTED.values()
            if f.high > 0 and (f.low > 0 or version >= FIRST_LEVEL_0_VERSION)]


def finalized_features(services: Services) -> list:
    """The cluster's finalized levels, each as a range of one level; a feature at 0 is not finalized."""
    Key = API_VERSIONS.Response.FinalizedFeatures
    return [Key(name=name, max_version_level=level, min_version_level=level)
            for name, level in services.features.levels.items()]


@handles("UpdateFeatures")
@requires(Operation.ALTER, ResourceType.CLUSTER)
async def update_features(request: Request, services: Services):
    body, version = request.body, request.version
    updates = [Update(u.feature, u.max_version_level, u.upgrade_type) for u in body.feature_updates]
    try:
        await services.features.update(updates, validate_only=body.validate_only)
    except KafkaError as exc:
        return UPDATE.Response(error_code=exc.code, error_message=exc.message)
    if version >= FIRST_UNLISTED_RESULTS_VERSION:
        return UPDATE.Response()
    # Kafka's controller names each success with its error's name for a message
    return UPDATE.Response(results=[UPDATE.Response.Results(feature=u.feature, error_message=ErrorCode.NONE.name)
                                    for u in updates])
