"""The features this gateway supports, the levels a new cluster finalizes, and Kafka's checks of a change.

A level is supported only where the gateway has the behaviour Kafka ties to
it. metadata.version names the Kafka release whose cluster metadata the
answers follow: 25 (4.0-IV3), which a new Kafka 4.0 cluster is formatted at;
the gateway keeps no KRaft metadata log, so it has no other level to move
to. group.version 1 is KIP-848's consumer protocol (ConsumerGroupHeartbeat
and ConsumerGroupDescribe), served unless the cluster finalizes 0. The
features whose every level above 0 the gateway lacks are not reported, as a
Kafka broker leaves out a feature it supports only at 0: kraft.version (no
KRaft quorum to reconfigure, KIP-853), transaction.version (its level 1
writes __transaction_state values in their flexible version 1 and level 2 is
KIP-890's epoch bump per transaction and implicit AddPartitionsToTxn; the
gateway does neither), eligible.leader.replicas.version (no ELR, KIP-966).

A change is checked as Kafka's controller checks one (FeatureControlManager):
each update in turn, the first refused refusing them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

METADATA_VERSION = "metadata.version"
GROUP_VERSION = "group.version"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures' upgrade_type
ALL_FAILED = "The update failed for all features since the following feature had an error: "


@dataclass(frozen=True)
class Feature:
    name: str
    low: int
    high: int
    initial: int  # the level a new cluster finalizes

    def range_text(self) -> str:
        """The range as Kafka's VersionRange writes it: `25`, `0-1`."""
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


SUPPORTED = {feature.name: feature for feature in (
    Feature(METADATA_VERSION, 25, 25, 25),
    Feature(GROUP_VERSION, 0, 1, 1),
)}
INITIAL = {feature.name: feature.initial for feature in SUPPORTED.values()}
UNSUPPORTED = Feature("", 0, 0, 0)  # how Kafka's controller treats a feature it does not support
# The features Kafka 4.0 knows besides metadata.version: the others are refused even at level 0
KAFKA_FEATURES = ("kraft.version", "transaction.version", GROUP_VERSION, "eligible.leader.replicas.version",
                  "test.feature.version")


@dataclass(frozen=True)
class Update:
    feature: str
    level: int
    upgrade_type: int


def updated(finalized: dict[str, int], updates: list[Update], controller_id: int) -> dict[str, int]:
    """The finalized levels `updates` leave (a feature at 0 is no longer finalized), or Kafka's
    INVALID_UPDATE_VERSION for the first update refused, raised."""
    levels = dict(finalized)
    for update in updates:
        why = _refusal(update, finalized.get(update.feature, 0), controller_id)
        if why is not None:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION, f"{ALL_FAILED}Invalid update version {update.level} "
                                                               f"for feature {update.feature}. {why}")
        levels[update.feature] = update.level
    return {name: level for name, level in levels.items() if level != 0}


def _refusal(update: Update, current: int, controller_id: int) -> str | None:
    """Why Kafka's controller refuses the update, in the order it checks; None if it takes it."""
    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if update.level < 0:
        return "A feature version cannot be less than 0."
    supported = SUPPORTED.get(update.feature, UNSUPPORTED)
    if not supported.low <= update.level <= supported.high:
        if supported.high == 0:
            return f"Local controller {controller_id} does not support this feature."
        return f"Local controller {controller_id} only supports versions {supported.range_text()}"
    if update.level < current and update.upgrade_type == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.")
    if update.level > current and update.upgrade_type != UPGRADE:
        return "Can't downgrade to a newer version."
    if update.feature != METADATA_VERSION and update.feature not in KAFKA_FEATURES:
        return f"Feature {update.feature} not found."
    return None
