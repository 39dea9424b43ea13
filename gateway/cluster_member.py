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
partitions it led from the stores at their epochs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
import trio

from gateway.api.services import Services
from gateway.chp.chp_client import ChpClient
from gateway.cluster.claims import ServerClaims
from gateway.cluster.cluster_view import ClusterView
from gateway.cluster.leadership import (
    Leaders,
    TopicSharing,
    assign_leaders,
    follow_cluster,
    serve_log_starts,
    serve_topic_requests,
)
from gateway.cluster.membership import Membership
from gateway.cluster.producer_id_blocks import ProducerIdBlocks, serve_producer_id_requests
from gateway.cluster.remote_markers import serve_marker_requests
from gateway.server.dispatch import Dispatcher
from gateway.settings.table import Settings
from gateway.zmq_curve import CurveKeys

log = structlog.get_logger()

StartController = Callable[[trio.Nursery, ClusterView, TopicSharing], Awaitable[Services]]
StartFollower = Callable[[trio.Nursery, ClusterView, TopicSharing, ProducerIdBlocks], Awaitable[Services]]


class ClusterMember:
    def __init__(self, settings: Settings, ports: dict[str, int], dispatcher: Dispatcher):
        broker = settings.broker
        self.node_id = broker.node_id
        self.client = ChpClient(settings.chp.chp_servers, "cluster/", keys=CurveKeys.of(settings.mesh))
        self.claims = ServerClaims(self.client)
        self.membership = Membership(self.client, self.claims, broker.node_id, broker.broker_rack,
                                     settings.chp.chp_session_timeout_ms / 1000)
        self.leaders = Leaders(self.client)
        self.cluster = ClusterView(broker, self.membership, self.leaders)
        self.cluster.bound(ports)
        self.sharing = TopicSharing(self.client, self.membership, self.claims)
        self.dispatcher = dispatcher

    async def start(self, nursery: trio.Nursery, as_controller: StartController, as_follower: StartFollower) -> None:
        """Join the cluster and serve in the role this gateway gets; the services go to the dispatcher."""
        log.info("cluster_joining", chp_servers=self.client.servers)
        await nursery.start(self.client.run)
        await self.membership.join(self.cluster.advertised_listeners())
        nursery.start_soon(self.membership.refresh)
        if not self.membership.is_controller:
            await nursery.start(self._follow_until_controller, nursery, as_controller, as_follower)
            return
        await self._control(nursery, as_controller)

    async def _control(self, nursery: trio.Nursery, as_controller: StartController) -> None:
        services = await as_controller(nursery, self.cluster, self.sharing)
        for name, state in self.leaders.shared_topics().items():
            if services.topics.get(name) is None:  # deleted while no controller ran: the journal says so
                await self.sharing.unshare(state)
        nursery.start_soon(assign_leaders, self.client, self.claims, self.membership, self.leaders)
        nursery.start_soon(serve_topic_requests, self.client, services.topics)
        nursery.start_soon(serve_log_starts, self.client, services.topics)
        nursery.start_soon(serve_producer_id_requests, self.client, services.producer_ids)
        nursery.start_soon(follow_cluster, self.client, self.leaders, services.topics, self.node_id)
        nursery.start_soon(serve_marker_requests, self.client, self.node_id, services.topics.partition)
        self.dispatcher.services = services

    async def _follow_until_controller(self, nursery: trio.Nursery, as_controller: StartController,
                                       as_follower: StartFollower, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as following:
            services = await as_follower(following, self.cluster, self.sharing,
                                         ProducerIdBlocks(self.client, self.node_id))
            following.start_soon(follow_cluster, self.client, self.leaders, services.topics, self.node_id)
            following.start_soon(serve_marker_requests, self.client, self.node_id, services.topics.partition)
            self.dispatcher.services = services
            task_status.started()
            await self.membership.claim_controller_when_free()
            following.cancel_scope.cancel()
        await services.topics.lead({})  # the controller's registry opens them again
        log.info("controller_taking_over", node_id=self.node_id)
        await self._control(nursery, as_controller)
