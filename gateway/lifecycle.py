"""Running a node's main coroutine under trio until it ends or is told to stop."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import partial

import structlog
import trio

from gateway.allocator import keep_freed_memory
from gateway.collector import settle_after_imports
from gateway.logging_setup import configure_logging
from gateway.observability.http_endpoint import Readiness, start_http
from gateway.settings.declaration import Command
from gateway.settings.sources import Loaded, load_or_exit
from gateway.settings.table import HttpSettings, MeshSettings
from gateway.zmq_curve import CurveKeyError, CurveKeys, curve_authenticator
from gateway.zmq_trio import zmq_context

log = structlog.get_logger()


def start_command(command: Command, prog: str, description: str, extend=None) -> Loaded:
    """The settings and arguments of this run, with logging set up as they say; a
    bad setting ends the process (exit code 2)."""
    loaded = load_or_exit(command, prog, description, extend)
    configure_logging(loaded.settings.logging)
    for warning in loaded.warnings:
        log.warning("settings_ignored", detail=warning)
    return loaded


def failures(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions a (nested) exception group holds, in order: what `except*` caught."""
    return [leaf for exc in group.exceptions
            for leaf in (failures(exc) if isinstance(exc, BaseExceptionGroup) else [exc])]


def first_failure(group: BaseExceptionGroup) -> BaseException:
    """The first of the group's `failures`."""
    return failures(group)[0]


def settle_process() -> None:
    """Called by a server process's entry point once its modules are imported, before it starts:
    the garbage collector (collector.py) and glibc's allocator (allocator.py) set for serving."""
    settle_after_imports()
    keep_freed_memory()


def run_node(main: Callable[..., Awaitable[None]], *args, lifeline: bool = False,
             mesh: MeshSettings | None = None) -> None:
    """Run `main(context, *args)` with a ZeroMQ context until it returns or SIGINT/SIGTERM
    arrives; with `lifeline`, also until standard input closes (the parent process died).
    A mesh node's context authenticates its peers when the `mesh` settings name CURVE keys."""
    try:
        keys = None if mesh is None else CurveKeys.of(mesh)
    except CurveKeyError as exc:
        log.error("node_failed", reason=str(exc))
        sys.exit(1)
    settle_process()
    trio.run(_until_stopped, main, args, lifeline, keys)


async def _until_stopped(main, args, lifeline: bool, keys: CurveKeys | None) -> None:
    with zmq_context() as context, curve_authenticator(context, keys):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope)
            if lifeline:
                nursery.start_soon(_cancel_on_stdin_eof, nursery.cancel_scope)
            await main(context, *args)
            nursery.cancel_scope.cancel()


async def served(context, http: HttpSettings, run, *args) -> None:
    """`run(context, *args, task_status=...)` with the HTTP endpoint beside it: ready once `run` started."""
    readiness = Readiness()
    async with trio.open_nursery() as nursery:
        await start_http(nursery, http, readiness)
        await nursery.start(partial(run, context, *args))
        readiness.serving()


async def cancel_on_signal(scope: trio.CancelScope) -> None:
    """Cancel `scope` at the first SIGINT or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("stopping", signal=signal.Signals(signum).name)
            scope.cancel()
            return


async def _cancel_on_stdin_eof(scope: trio.CancelScope) -> None:
    async with trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())) as stdin:
        while await stdin.receive_some(4096):
            pass
    log.info("stopping", reason="standard input closed")
    scope.cancel()
