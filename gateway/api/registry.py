"""Which handler serves which Kafka API, and in which versions."""

from __future__ import annotations

from gateway.api.request_quota import measured
from gateway.server.dispatch import Route
from protocol.kafka.apis import by_name
from protocol.kafka.schema import Versions

ROUTES: dict[int, Route] = {}


def handles(api_name: str, versions: str | None = None, advertised: bool = True):
    """Register the decorated coroutine function as the handler of an API.

    `versions` narrows the range the schema declares, for an API whose newest
    versions need behaviour the gateway does not have yet; ApiVersions
    advertises exactly the registered ranges, but for the APIs registered
    with `advertised=False`, which are served without being listed.
    """
    api = by_name(api_name)

    def register(handler):
        served = Versions.parse(versions) if versions else api.version_range
        if served.low < api.version_range.low or served.high > api.version_range.high:
            raise ValueError(f"{api_name}: {versions} outside the schema's {api.versions}")
        ROUTES[api.key] = Route(api, served, measured(handler), advertised)
        return handler

    return register
