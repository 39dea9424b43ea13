"""Kafka's controlled shutdown for a gateway of a cluster: its partitions led elsewhere first.

The gateway marks its membership key `shutting_down`; the controller (this
gateway itself, if it is the controller) then gives every partition it leads to
another live gateway at the next epoch (`assign_leaders`), whose new leader
fences the stores and opens it, then marks it served (`cluster/serving/`). This
gateway refuses produce to each partition (NOT_LEADER_OR_FOLLOWER, so clients
re-route) when its mirror shows the move, and answers what waited on the stores
once the new leader serves, by where its log goes on (shared_topics.py). Each of
`controlled.shutdown.max.retries` attempts announces the shutdown again and
waits up to `controlled.shutdown.retry.backoff.ms` for every partition to be
served elsewhere, Kafka's internal topics' too (their coordinators move with
them). With no other live gateway there is nothing to hand over.
"""

from __future__ import annotations

import structlog
import trio

from gateway.chp.chp_client import ChpClient
from gateway.cluster.leadership import PARTITIONS, Leaders, partition_values, until
from gateway.cluster.membership import Membership
from gateway.settings.table import ChpSettings

log = structlog.get_logger()


class Handover:
    def __init__(self, client: ChpClient, membership: Membership, leaders: Leaders):
        self.client = client
        self.membership = membership
        self.leaders = leaders
        self.given: set[tuple[str, int]] = set()  # partitions led here since the shutdown began

    async def run(self, settings: ChpSettings) -> None:
        """Hand every partition over within the settings' bounds; those left move as after a kill."""
        if not settings.controlled_shutdown_enable:
            return
        attempts = settings.controlled_shutdown_max_retries
        for attempt in range(1, attempts + 1):
            with trio.move_on_after(settings.controlled_shutdown_retry_backoff_ms / 1000):  # CHP may be gone too
                await self.membership.announce_shutdown()
                await until(self.client, self.handed_over)
                log.info("controlled_shutdown_done", attempt=attempt, partitions=len(self.given),
                         alone=not self.membership.candidates() - {self.membership.node_id})
                return
            log.warning("controlled_shutdown_attempt_failed", attempt=attempt, attempts=attempts,
                        still_led=sorted(f"{topic_id}/{index}" for topic_id, index in self.led_here()))

    def led_here(self) -> list[tuple[str, int]]:
        """The partitions this gateway leads and must hand over."""
        return [partition for partition, value in partition_values(self.client, PARTITIONS).items()
                if value["leader"] == self.membership.node_id]

    def handed_over(self) -> bool:
        """Whether each partition led here is served by its new leader; at once with nobody to take them."""
        led = self.led_here()
        self.given.update(led)
        if not self.membership.candidates() - {self.membership.node_id}:
            return True
        return not led and all(self.leaders.serving(*partition) == self.leaders.leader(*partition)
                               for partition in self.given)  # a deleted topic's: both None
