"""A gateway in a cluster of gateways: a follower until it holds the controller key, then the controller.

A follower takes its topics from CHP and leads what the controller assigns it
(internal topics' partitions among them, whose groups and transactional ids
it coordinates); the producer ids are the controller's, which it
hands out (in blocks the controller journals for it). When the controller's key
expires (it died), every follower claims it; the winner stops following,
hands back the partitions it led, and starts its broker state as the
controller does: it replays the journals the old controller wrote (metadata,
quotas, ACLs, credentials), takes them over, and from then on assigns
leadership, the old controller's partitions included. It reopens the
partitions it led from the stores at their epochs. A controller that finds
the key another's (it was paused past the key's ttl) steps down the same way:
its controller state ends, and it follows.

At SIGTERM it first hands its partitions over (handover.py), and once its
requests are answered stops its role and deletes its keys, so that the others
take over at once (a controller's successor replays journals no longer written).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
import trio

from gateway.api.services import Services
from gateway.chp.chp_client import ChpClient
from gateway.cluster.claims import CLAIM_TIMEOUT_S, ServerClaims
from gateway.cluster.cluster_view import ClusterView
from gateway.cluster.handover import Handover
from gateway.cluster.leadership import (
    Leaders,
    TopicSharing,
    assign_leaders,
    follow_cluster,
    serve_log_starts,
    serve_topic_requests,
)
from gateway.cluster.membership import Membership
from gateway.cluster.preferred_leaders import Elections, adopt_new_gateways, rebalance_periodically
from gateway.cluster.producer_id_blocks import ProducerIdBlocks, serve_producer_id_requests
from gateway.cluster.remote_markers import serve_marker_requests
from gateway.server.dispatch import Dispatcher
from gateway.settings.table import BrokerSettings, Settings
from gateway.storage.mesh_storage import fence_quorum
from gateway.wall_clock import now_ms
from gateway.zmq_curve import CurveKeys

log = structlog.get_logger()

StartController = Callable[[trio.Nursery, ClusterView, TopicSharing], Awaitable[Services]]
StartFollower = Callable[[trio.Nursery, ClusterView, TopicSharing, ProducerIdBlocks], Awaitable[Services]]


def stores_to_lead(broker: BrokerSettings) -> int:
    """Live stores a gateway needs to lead partitions: to win their fences and to take acks=all produce."""
    stores = max(broker.expected_stores, broker.embedded_stores)
    return max(broker.min_insync_replicas, fence_quorum(stores, broker.min_insync_replicas))


class ClusterMember:
    def __init__(self, settings: Settings, ports: dict[str, int], dispatcher: Dispatcher,
                 live_stores: Callable[[], int]):
        broker = settings.broker
        self.settings = settings.chp
        self.node_id = broker.node_id
        # Every key (the gateways' are all under cluster/): only a client of every key can tell
        # from the sequences that it missed updates (chp_client.py).
        self.client = ChpClient(settings.chp.chp_servers, keys=CurveKeys.of(settings.mesh))
        self.claims = ServerClaims(self.client)
        needed = stores_to_lead(broker)
        self.membership = Membership(self.client, self.claims, broker.node_id, broker.broker_rack,
                                     settings.chp.chp_session_timeout_ms / 1000,
                                     can_lead=lambda: live_stores() >= needed)
        self.leaders = Leaders(self.client)
        self.elections = Elections(self.claims, self.membership, self.leaders)
        self.cluster = ClusterView(broker, self.membership, self.leaders, self.elections)
        self.cluster.bound(ports)
        self.sharing = TopicSharing(self.client, self.membership, self.claims,
                                    settings.chp.chp_deleted_topic_notice_ms / 1000)
        self.dispatcher = dispatcher
        self._role = trio.CancelScope()  # what this gateway runs as follower, then as controller
        self._role_ended = trio.Event()

    async def start(self, nursery: trio.Nursery, as_controller: StartController, as_follower: StartFollower) -> None:
        """Join the cluster and serve in the role this gateway gets; the services go to the dispatcher."""
        log.info("cluster_joining", chp_servers=self.client.servers)
        await nursery.start(self.client.run)
        await self.membership.join(self.cluster.advertised_listeners())
        nursery.start_soon(self.membership.refresh)
        await nursery.start(self._serve_roles, as_controller, as_follower)

    async def hand_over(self) -> None:
        """Kafka's controlled shutdown: the partitions led here go to other gateways first (handover.py)."""
        await Handover(self.client, self.membership, self.leaders).run(self.settings)

    async def leave(self) -> None:
        """Stop this gateway's role (nothing more written to its journals), then leave the cluster at once."""
        self._role.cancel()
        await self._role_ended.wait()
        await self.membership.leave(CLAIM_TIMEOUT_S)

    async def _serve_roles(self, as_controller: StartController, as_follower: StartFollower,
                           *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve as the controller while this gateway holds the key, as a follower while not;
        started once the first role serves. Each role's state runs in a nursery of its own,
        ended when the role does: a follower that wins the key, or a controller that lost it
        (paused past its ttl: it steps down rather than run a second controller)."""
        try:
            with self._role:
                while True:
                    await self._serve_role(as_controller, as_follower, task_status)
                    task_status = trio.TASK_STATUS_IGNORED  # started by the first role
        finally:
            self._role_ended.set()  # leave() goes on once the role's journals are no longer written

    async def _serve_role(self, as_controller: StartController, as_follower: StartFollower, task_status) -> None:
        """Serve in the role this gateway has until it changes; started once it serves."""
        async with trio.open_nursery() as role:
            if self.membership.is_controller:
                services = await self._control(role, as_controller)
            else:
                services = await as_follower(role, self.cluster, self.sharing,
                                             ProducerIdBlocks(self.client, self.node_id))
            self._serve(role, services)
            task_status.started()
            if self.membership.is_controller:
                await self.membership.hold_controller()
            else:
                await self.membership.claim_controller_when_free()
            role.cancel_scope.cancel()
        await services.topics.close_all()
        log.info("cluster_role_changed", node_id=self.node_id,
                 role="controller" if self.membership.is_controller else "follower")

    async def _control(self, role: trio.Nursery, as_controller: StartController) -> Services:
        services = await as_controller(role, self.cluster, self.sharing)
        for name, state in self.leaders.shared_topics().items():
            if services.topics.get(name) is None:  # deleted while no controller ran: the journal says so
                deleted_at_ms = now_ms()  # or before: the name names no topic since
                await self.sharing.unshare(state, deleted_at_ms)
                services.topics.tell_deleted(name, deleted_at_ms)
        role.start_soon(assign_leaders, self.client, self.claims, self.membership, self.leaders)
        role.start_soon(adopt_new_gateways, self.elections)
        if self.settings.auto_leader_rebalance_enable:
            role.start_soon(rebalance_periodically, self.elections, self.settings.leader_imbalance_check_interval_seconds,
                            self.settings.leader_imbalance_per_broker_percentage)
        role.start_soon(serve_topic_requests, self.client, services.topics)
        role.start_soon(serve_log_starts, self.client, services.topics)
        role.start_soon(serve_producer_id_requests, self.client, services.producer_ids)
        return services

    def _serve(self, role: trio.Nursery, services: Services) -> None:
        """What every role runs: leading what CHP names, writing markers asked of it, serving clients."""
        role.start_soon(follow_cluster, self.client, self.leaders, services.topics, self.node_id)
        role.start_soon(serve_marker_requests, self.client, self.node_id,
                        services.groups.marked(services.topics.partition))
        self.dispatcher.services = services
