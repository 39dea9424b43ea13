"""Loads every handler module, so that each registers its APIs."""

import importlib
import pkgutil

from gateway.api import __path__ as package_path

NOT_HANDLERS = {"registry", "handlers"}


def load_handlers() -> None:
    for module in pkgutil.iter_modules(package_path):
        if module.name not in NOT_HANDLERS:
            importlib.import_module(f"{__package__}.{module.name}")
