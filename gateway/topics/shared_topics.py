"""What the topic registry needs of a cluster of gateways (gateway/cluster/leadership.py has it).

In a cluster only the controller writes the metadata journal; it shares
each topic's journaled state through CHP, from which the other gateways
take their topics, and partitions open only where they are led.
"""

from __future__ import annotations

from typing import Protocol

import structlog

log = structlog.get_logger()


class TopicSharing(Protocol):
    @property
    def is_controller(self) -> bool: ...

    async def share(self, state: dict) -> None: ...

    async def unshare(self, state: dict) -> None: ...

    async def request_creation(self, name: str) -> None: ...

    async def report_log_start(self, topic_id: str, index: int, log_start_offset: int, first_sequence: int
                               ) -> None: ...


async def fence_before_leading(subject: str, address: str, epoch: int) -> None:
    """Where a new leader fences the stores before it publishes (issue 16: the stores refuse
    records of older epochs). The stores take no fence yet, so a deposed leader that still
    runs can get writes acknowledged until it learns of its successor."""
    log.info("partition_fence_pending", topic=subject, address=address, epoch=epoch)
