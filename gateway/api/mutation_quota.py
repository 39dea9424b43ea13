"""Kafka's controller mutation quota (KIP-599) on CreateTopics, CreatePartitions and DeleteTopics.

Each partition created or deleted counts against the client's
controller_mutation_rate. From CreateTopics v6, CreatePartitions v3 and
DeleteTopics v5 the quota is strict: once the client is over it, each further
topic fails with THROTTLING_QUOTA_EXCEEDED and the response carries the time
to wait. Older versions, whose clients know no such error, are permissive:
everything is done and counted, and the response carries the throttle time.
Either way a throttled client's connection is muted as long.
"""

from __future__ import annotations

from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.quotas.entities import CONTROLLER_MUTATION_RATE
from gateway.server.dispatch import Request
from protocol.kafka.error_codes import ErrorCode

EXCEEDED = "The throttling quota has been exceeded."


class MutationQuota:
    """One request's partitions, counted against its client's controller_mutation_rate."""

    def __init__(self, request: Request, services: Services, strict_from: int):
        self.quotas, self.client_id, self.user = services.quotas, request.client_id, request.user
        self.connection = request.connection
        self.strict = request.version >= strict_from
        self.counting = not getattr(request.body, "validate_only", False)  # as Kafka: a validation is free
        self.throttle_ms = 0

    def check(self) -> None:
        """Before a mutation: THROTTLING_QUOTA_EXCEEDED if strict and the client is over its quota."""
        if not (self.strict and self.counting):
            return
        over_ms = self.quotas.throttle_ms(CONTROLLER_MUTATION_RATE, self.client_id, self.user)
        if over_ms:
            self.throttle_ms = max(self.throttle_ms, over_ms)
            raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, EXCEEDED)

    def count(self, partitions: int) -> None:
        """After a mutation of `partitions` partitions."""
        if not self.counting:
            return
        throttle_ms = self.quotas.record(CONTROLLER_MUTATION_RATE, self.client_id, partitions, self.user)
        if not self.strict:
            self.throttle_ms = max(self.throttle_ms, throttle_ms)

    def throttled(self, response):
        """The response with the request's throttle time; the connection muted as long."""
        if self.throttle_ms:
            response.throttle_time_ms = self.throttle_ms
            self.connection.throttle(self.throttle_ms)
        return response
