"""ApiVersions: the API ranges this gateway serves, and its feature flags (KIP-584)."""

from gateway.api.features import finalized_features, supported_features
from gateway.api.registry import ROUTES, handles
from gateway.api.services import Services
from gateway.server.dispatch import Request, advertised
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("ApiVersions")


@handles("ApiVersions")
async def api_versions(request: Request, services: Services):
    return API.Response(error_code=ErrorCode.NONE, api_keys=advertised(ROUTES),
                        supported_features=supported_features(request.version),
                        finalized_features=finalized_features(services),
                        finalized_features_epoch=services.features.epoch)
