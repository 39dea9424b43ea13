"""The group and transaction coordinators on a gateway that is not their coordinator.

In a cluster one gateway, the controller, coordinates every group and
transaction (FindCoordinator names it). Elsewhere each call is refused with
NOT_COORDINATOR, Kafka's answer that sends a client back to FindCoordinator;
what a listing asks of it finds nothing coordinated here.
"""

from __future__ import annotations

from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode


class CoordinatedElsewhere:
    def group_ids(self) -> list[str]:
        return []

    def transactions(self) -> list:
        return []

    def group(self, group_id: str) -> None:
        return None

    def transaction(self, transactional_id: str) -> None:
        return None

    def __getattr__(self, name: str):
        def refuse(*args, **kwargs):
            raise KafkaError(ErrorCode.NOT_COORDINATOR, "this gateway is not the coordinator: the controller is")

        return refuse
