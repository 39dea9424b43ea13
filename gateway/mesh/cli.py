"""Command-line entry points shared by the mesh nodes."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import structlog
import trio

from gateway.mesh.config import MeshConfig
from gateway.mesh.sockets import zmq_context

# option -> (MeshConfig field, help); the options mirror the reference's keys.
OPTIONS = {
    "--beacon-interval": ("beacon_interval_ms", "milliseconds between beacons (beacon/interval)"),
    "--beacon-timeout": ("beacon_timeout_ms", "milliseconds of silence before a peer expires (beacon/timeout)"),
    "--beacon-sub-address": ("beacon_sub_address", "tower endpoint beacons are sent to (beacon/sub_address)"),
    "--beacon-pub-address": ("beacon_pub_address", "tower endpoint beacons come from (beacon/pub_address)"),
    "--beacon-address": ("beacon_address", "host to advertise; empty: as the tower sees us (beacon/address)"),
    "--tower-sub-address": ("tower_sub_address", "where the tower binds its XSUB (tower/sub_address)"),
    "--tower-pub-address": ("tower_pub_address", "where the tower binds its XPUB (tower/pub_address)"),
    "--head-interval": ("head_interval_ms", "milliseconds between a producer's HEADs (producer/head_interval)"),
    "--offset-reset": ("offset_reset", "earliest or latest (consumer/offset/reset)"),
    "--store-db": ("store_db", "the store's data directory (store/db)"),
    "--store-fsync": ("store_fsync", "batch: every ACKed record is on disk; interval: ACK once written, "
                                     "fsync at most once per --store-fsync-interval-ms"),
    "--store-fsync-interval-ms": ("store_fsync_interval_ms", "milliseconds between fsyncs of the interval policy"),
    "--store-retention-bytes": ("store_retention_bytes", "bytes a partition keeps at least before its oldest "
                                                         "segments are deleted; -1: unlimited (the gateway's "
                                                         "__dafka_gateway_* subjects are always kept)"),
    "--store-retention-ms": ("store_retention_ms", "age of a segment's newest record after which the segment "
                                                   "is deleted; -1: unlimited (__dafka_gateway_* kept)"),
    "--store-retention-check-interval-ms": ("store_retention_check_interval_ms",
                                            "milliseconds between applications of the store retention"),
    "--store-segment-bytes": ("store_segment_bytes", "bytes of a log segment, the unit retention and "
                                                     "discards delete"),
}
CHOICES = {"offset_reset": ["earliest", "latest"], "store_fsync": ["batch", "interval"]}
BEACON_OPTIONS = ["--beacon-interval", "--beacon-timeout", "--beacon-sub-address", "--beacon-pub-address", "--beacon-address"]


def parser(description: str, options: list[str]) -> argparse.ArgumentParser:
    """An argument parser with the given mesh options and their reference defaults."""
    result = argparse.ArgumentParser(description=description)
    defaults = MeshConfig()
    for option in options:
        field, help_text = OPTIONS[option]
        default = getattr(defaults, field)
        kind = type(default)
        result.add_argument(option, dest=field, type=kind, default=default, choices=CHOICES.get(field),
                            help=f"{help_text}; default {default!r}")
    return result


def config_from(arguments: argparse.Namespace) -> MeshConfig:
    known = {field for field, _ in OPTIONS.values()}
    return MeshConfig(**{k: v for k, v in vars(arguments).items() if k in known})


def configure_logging() -> None:
    """One key=value event per line on stderr."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"]),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


def run(main: Callable[..., Awaitable[None]], *args, lifeline: bool = False) -> None:
    """Run `main(context, *args)` under trio until it returns or SIGINT/SIGTERM arrives;
    with `lifeline`, also until standard input closes (the parent process died)."""
    configure_logging()
    trio.run(_until_signal, main, args, lifeline)


async def _until_signal(main, args, lifeline: bool) -> None:
    with zmq_context() as context:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_signal, nursery.cancel_scope)
            if lifeline:
                nursery.start_soon(_cancel_on_stdin_eof, nursery.cancel_scope)
            await main(context, *args)
            nursery.cancel_scope.cancel()


async def _cancel_on_stdin_eof(scope: trio.CancelScope) -> None:
    async with trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())) as stdin:
        while await stdin.receive_some(4096):
            pass
    structlog.get_logger().info("stopping", reason="standard input closed")
    scope.cancel()


async def _cancel_on_signal(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            structlog.get_logger().info("stopping", signal=signal.Signals(signum).name)
            scope.cancel()
            return
