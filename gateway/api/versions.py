"""ApiVersions: the API ranges this gateway serves, and its feature flags (KIP-584)."""

from gateway.api.features import finalized_features, supported_features
from gateway.api.registry import ROUTES, handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("ApiVersions")


@handles("ApiVersions")
async def api_versions(request: Request, services: Services):
    keys = [
        API.Response.ApiKeys(api_key=key, min_version=route.versions.low,
                             max_version=route.versions.high)
        for key, route in sorted(ROUTES.items())
    ]
    return API.Response(error_code=ErrorCode.NONE, api_keys=keys, supported_features=supported_features(request.version),
                        finalized_features=finalized_features(services),
                        finalized_features_epoch=services.features.epoch)
