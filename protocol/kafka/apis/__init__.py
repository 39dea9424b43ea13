"""One module per Kafka API, each declaring `API`; `ALL` collects them by key.

Every module of this package is imported, so a new API is served as soon as
its module exists.
"""

from __future__ import annotations

import importlib
import pkgutil

from protocol.kafka.schema import Api


def _collect() -> dict[int, Api]:
    apis: dict[int, Api] = {}
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        api = getattr(module, "API", None)
        if not isinstance(api, Api):
            continue
        if api.key in apis:
            raise ValueError(f"api key {api.key} declared by {apis[api.key].name} and {api.name}")
        apis[api.key] = api
    return dict(sorted(apis.items()))


ALL: dict[int, Api] = _collect()
_BY_NAME = {api.name: api for api in ALL.values()}


def by_name(name: str) -> Api:
    """The Api called `name` ("Produce", "ApiVersions"); KeyError if none."""
    return _BY_NAME[name]
