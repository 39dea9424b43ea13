"""The whole gateway in one trio run: the mesh (embedded or joined), the broker, the listeners.

Start-up claims the data directory and binds the listeners first, so that
the usual mistakes (a port in use, a directory in use or not writable) end
it at once with one line; clients that connect early wait in the backlog
until the broker has recovered its state. SIGINT and SIGTERM end it at any
time: before it serves, at once; once it serves, after the requests already
read are answered, and in a cluster after a controlled shutdown (its
partitions handed over first; cluster/handover.py), leaving the cluster last.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import structlog
import trio
import zmq

from gateway.api.handlers import load_handlers
from gateway.api.registry import ROUTES
from gateway.broker import start_broker
from gateway.configs.listener_tls import ListenerTls
from gateway.data_directory import StartupError
from gateway.early_start import EarlyStart
from gateway.embedded_mesh import EmbeddedStoreFailed, StoreRuns, run_embedded_mesh
from gateway.lifecycle import first_failure, settle_process
from gateway.mesh.local_peers import share_inproc
from gateway.mesh.mesh_node import MeshBindError
from gateway.observability.http_endpoint import Readiness, start_http
from gateway.quotas.connection_rates import ConnectionRates
from gateway.security.authenticator import Authenticator
from gateway.security.sasl_session import sessions
from gateway.server.connection import ConnectionLimits
from gateway.server.dispatch import Dispatcher
from gateway.server.listener import KafkaListener, ListenerLimits
from gateway.server.request_memory import RequestMemory
from gateway.server.tls import TlsAcceptor, TlsSettingsError
from gateway.settings.listeners import TLS_PROTOCOLS
from gateway.settings.table import BrokerSettings, Settings
from gateway.storage.mesh_storage import MeshStorage
from gateway.store_processes import stop_store
from gateway.zmq_curve import CurveKeyError, CurveKeys, curve_authenticator
from gateway.zmq_trio import zmq_context

log = structlog.get_logger()


def run_until_stopped(settings: Settings, early: EarlyStart) -> None:
    """Run the gateway; a failure ends the process with one log line and exit code 1."""
    settle_process()
    try:
        trio.run(run_gateway, settings, early)
    except* (StartupError, EmbeddedStoreFailed, MeshBindError, CurveKeyError) as failures:
        _stop_stores(early)
        log.error("gateway_failed", reason=str(first_failure(failures)))
        sys.exit(1)
    except* Exception:
        _stop_stores(early)
        log.exception("gateway_crashed")
        sys.exit(1)


def _stop_stores(early: EarlyStart) -> None:
    """Stores started early that the gateway never took over (it failed first) end before its
    last line: none writes to its output after it."""
    for process in early.stores:
        stop_store(process)


async def run_gateway(settings: Settings, early: EarlyStart, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve until SIGINT/SIGTERM, then finish in-flight requests and stop."""
    load_handlers()
    broker = settings.broker
    protocols = {listener.name: broker.security_protocol(listener.name) for listener in broker.bound_listeners()}
    listener_tls = _listener_tls(settings, protocols)
    tls = None if listener_tls is None else TlsAcceptor(
        listener_tls.context, settings.ssl.ssl_handshake_timeout_ms / 1000, settings.ssl.ssl_principal_mapping_rules)
    listener = KafkaListener(
        None, broker.bound_listeners(), lambda: _listener_limits(_broker_now(listener.dispatcher, broker)),
        ConnectionLimits(max_request_bytes=broker.socket_request_max_bytes,
                         idle_timeout_s=broker.connections_max_idle_ms / 1000,
                         receive_timeout_s=broker.request_receive_timeout_ms / 1000,
                         max_unsent_response_bytes=broker.unsent_response_max_bytes,
                         request_memory=RequestMemory(broker.queued_max_request_bytes)),
        protocols, tls)
    readiness = Readiness()
    # Signals are taken from before the port is bound: a client or supervisor that sees the port may stop us.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        await _serve_until_stopped(settings, early, listener, listener_tls, readiness, signals, task_status)
    log.info("gateway_stopped")


async def _serve_until_stopped(settings: Settings, early: EarlyStart, listener: KafkaListener,
                               listener_tls: ListenerTls | None, readiness: Readiness, signals, task_status) -> None:
    broker = settings.broker
    try:
        ports = await _bind(listener)
        with zmq_context() as context, curve_authenticator(context, CurveKeys.of(settings.mesh)):
            if broker.embedded_stores and broker.embedded_stores_in_process:
                share_inproc(context)  # before the gateway's own nodes: they pair with the stores' (local_peers.py)
            storage = MeshStorage(context, settings.mesh, max_unacked_bytes=broker.max_unacked_bytes)
            try:
                async with trio.open_nursery() as nursery:
                    stopping = trio.Event()
                    nursery.start_soon(_stop_on_signal, signals, nursery.cancel_scope, stopping, readiness)
                    await start_http(nursery, settings.http, readiness)
                    if broker.embedded_stores:
                        await _start_embedded_mesh(nursery, context, settings, storage, early.stores)
                    await nursery.start(storage.run)
                    listener.dispatcher = Dispatcher(ROUTES, None)
                    member = await start_broker(nursery, settings, storage, ports, listener.dispatcher, listener_tls)
                    # the stores of the services now serving: a gateway that becomes the controller replaces them
                    listener.authentication = sessions(Authenticator(
                        broker, lambda user, mechanism: listener.dispatcher.services.scram_credentials.lookup(
                            user, mechanism),
                        lambda token_id, mechanism: listener.dispatcher.services.delegation_tokens.credential(
                            token_id, mechanism)))
                    listener.connection_quota = ConnectionRates(
                        lambda: listener.dispatcher.services.quotas,
                        lambda: _broker_now(listener.dispatcher, broker).max_connection_creation_rate,
                        broker.quota_window_num, broker.quota_window_size_seconds)
                    await nursery.start(listener.serve)
                    readiness.serving()
                    task_status.started(ports)
                    await stopping.wait()
                    if member is not None:
                        await member.hand_over()
                    listener.shutdown()
                    await listener.stopped.wait()
                    await listener.dispatcher.services.topics.checkpoint_all()
                    if member is not None:
                        await member.leave()
                    nursery.cancel_scope.cancel()
            finally:
                storage.close()
    finally:
        listener.close()
        os.close(early.lock)


def _broker_now(dispatcher: Dispatcher | None, static: BrokerSettings) -> BrokerSettings:
    """The broker settings with the dynamic configs of the services now serving (a gateway that becomes the
    controller replaces them); the static ones before the broker's state is read."""
    services = dispatcher and dispatcher.services
    return static if services is None else services.broker_configs.dynamic.effective


def _listener_limits(broker: BrokerSettings) -> ListenerLimits:
    return ListenerLimits(broker.max_connections, broker.max_connections_per_ip, broker.max_connections_per_ip_overrides)


def _listener_tls(settings: Settings, protocols: dict[str, str]) -> ListenerTls | None:
    """The TLS of the SSL (and SASL_SSL) listeners, if any; StartupError if their key, certificates or settings
    do not serve."""
    served = {name: protocol for name, protocol in protocols.items() if protocol in TLS_PROTOCOLS}
    if not served:
        return None
    try:
        return ListenerTls({name: settings.ssl_of(name) for name in served}, served)
    except TlsSettingsError as exc:
        raise StartupError(str(exc)) from None


async def _bind(listener: KafkaListener) -> dict[str, int]:
    try:
        return await listener.bind()
    except OSError as exc:
        where = ", ".join(str(entry) for entry in listener.listeners)
        raise StartupError(f"cannot listen on {where}: {exc.strerror}; another process may hold the port: "
                           f"stop it, or choose another port (port, listeners)") from None


async def _start_embedded_mesh(nursery: trio.Nursery, context: zmq.Context, settings: Settings,
                               runs: StoreRuns, started: list[subprocess.Popen]) -> None:
    try:
        await nursery.start(run_embedded_mesh, context, settings, runs, started)
    except* zmq.ZMQError as failures:
        mesh = settings.mesh
        raise StartupError(f"cannot bind the embedded tower on {mesh.tower_sub_address} and "
                           f"{mesh.tower_pub_address}: {first_failure(failures)}; another tower or process may "
                           f"hold them: choose other tower and beacon addresses") from None


async def _stop_on_signal(signals, scope: trio.CancelScope, stopping: trio.Event, readiness: Readiness) -> None:
    """At the first SIGINT or SIGTERM: a gentle stop once serving, else at once; at a
    second one, at once whatever is left."""
    async for signum in signals:
        name = signal.Signals(signum).name
        if readiness.ready:
            log.info("shutdown_requested", signal=name)
            readiness.stopping()
            stopping.set()
        else:
            log.info("stopping", signal=name)
            scope.cancel()
            return
