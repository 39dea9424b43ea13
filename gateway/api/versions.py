"""ApiVersions: the API ranges this gateway serves."""

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

from .registry import ROUTES, handles

API = by_name("ApiVersions")


@handles("ApiVersions")
async def api_versions(request):
    keys = [
        API.Response.ApiKeys(api_key=key, min_version=route.versions.low,
                             max_version=route.versions.high)
        for key, route in sorted(ROUTES.items())
    ]
    return API.Response(error_code=ErrorCode.NONE, api_keys=keys)
