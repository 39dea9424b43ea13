"""The transaction coordinator on a gateway that is not the controller.

In a cluster the controller coordinates every transaction (FindCoordinator
names it). Elsewhere each call is refused with NOT_COORDINATOR, Kafka's
answer that sends a client back to FindCoordinator; what a listing asks of
it finds nothing coordinated here.
"""

from __future__ import annotations

from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode


class CoordinatedElsewhere:
    def transactions(self) -> list:
        return []

    def transaction(self, transactional_id: str) -> None:
        return None

    def check_produce(self, transactional_id: str, producer_id: int, epoch: int, topic: str, partition: int) -> None:
        """A transactional batch for a partition led here: accepted unverified, as Kafka's leaders do
        without partition verification; the partition's producer state still fences older epochs."""

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool:
        """OffsetFetch of a group coordinated here asks: no transaction coordinated here holds offsets."""
        return False

    def __getattr__(self, name: str):
        def refuse(*args, **kwargs):
            raise KafkaError(ErrorCode.NOT_COORDINATOR, "this gateway is not the transaction coordinator: the "
                                                        "controller is")

        return refuse
