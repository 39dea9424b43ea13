"""Sending clients to a partition's leader, as Kafka does (KIP-951): a gateway that does not
lead a partition answers NOT_LEADER_OR_FOLLOWER and, where the version carries them, the
current leader and its endpoint, so that the client re-routes without a Metadata round."""

from __future__ import annotations

from gateway.api.services import Services
from protocol.kafka.error_codes import ErrorCode


def not_served(services: Services, name: str | None, number: int) -> ErrorCode:
    """Why this gateway has no partition `number` of topic `name` to serve."""
    topic = services.topics.get(name) if name is not None else None
    if topic is not None and 0 <= number < len(topic.partitions):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def current_leader(services: Services, name: str, number: int, leader_class):
    """The partition's leader and epoch as the response's CurrentLeader struct."""
    leader, epoch = services.cluster.leader(services.topics.get(name), number)
    return leader_class(leader_id=leader, leader_epoch=epoch)


def leader_endpoints(services: Services, listener: str, leaders, endpoint_class) -> list:
    """NodeEndpoints for the leaders named in CurrentLeader structs."""
    wanted = {leader.leader_id for leader in leaders if leader.leader_id >= 0}
    if not wanted:
        return []
    return [endpoint_class(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in services.cluster.brokers(listener) if b.node_id in wanted]


def leadership(services: Services, topic, internal=None):
    """index -> (leader, leader epoch, replicas, in-sync replicas) of a partition of `topic`, or of the
    `internal` topic's before its first record (the controller's); no replicas while it has no leader."""
    cluster = services.cluster
    if topic is None:
        controller = cluster.controller_id
        return lambda index: (controller, internal.partitions[index].leader_epoch, [controller], [controller])
    return cluster.leadership(topic)
