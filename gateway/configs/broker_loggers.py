"""The BROKER_LOGGER resource: this gateway's loggers and their levels, described and changed live as
Kafka 4's broker does (ConfigHelper describes, RuntimeLoggerManager changes).

A logger is named as its module is (gateway.server.connection), a package's
(gateway.server) setting the level of every module under it that has no
level of its own; `root` is the top (gateway/logging_setup.py). A change
holds in this process only: it is neither journaled nor shared, and a
restart begins again from log.level, as Kafka's log4j changes are lost when
the broker stops.
"""

from __future__ import annotations

import structlog

from gateway.kafka_error import KafkaError
from gateway.logging_setup import LOG4J_LEVELS, ROOT, logger_exists, set_level
from protocol.kafka.config_values import ConfigOperation
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

VALID_LEVELS = ", ".join(sorted(LOG4J_LEVELS))  # as Kafka's message lists them

Change = tuple[str, int, str | None]  # IncrementalAlterConfigs' (logger, operation, level)


def check_described(name: str, node: int) -> None:
    """Kafka's checks of the resource name when described."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if _node_id(name, "Broker") != node:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node} but received {name}")


def change_levels(name: str, node: int, changes: list[Change], validate_only: bool) -> None:
    """Check every change, then make them all (unless `validate_only`), in Kafka's order and words."""
    if _node_id(name, "Node") != node:
        # Kafka's message names the broker's own id twice
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node}, but received {node}")
    for change in changes:
        _check(*change)
    if validate_only:
        return
    for logger, operation, level in changes:
        set_level(logger, level if operation == ConfigOperation.SET else None)
        log.warning("logger_level_changed", logger=logger, level=level if operation == ConfigOperation.SET else None)


def _node_id(name: str, noun: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{noun} id must be an integer, but it is: {name}") from None


def _check(logger: str, operation: int, level: str | None) -> None:
    if operation not in tuple(ConfigOperation):  # Kafka fails on the unknown operation: no message
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    if operation in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"{ConfigOperation(operation).name} operation is not allowed for the BROKER_LOGGER resource")
    if not logger_exists(logger):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!")
    if operation == ConfigOperation.SET and level not in LOG4J_LEVELS:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {logger} to {level} as it is not "
                                                   f"a supported log level. Valid log levels are {VALID_LEVELS}")
    if operation == ConfigOperation.DELETE and logger == ROOT:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Removing the log level of the {ROOT} logger is not allowed")
