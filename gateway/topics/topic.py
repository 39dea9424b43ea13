"""Topics: names, ids, partitions and config overrides, and their rules."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from gateway.topics.topic_configs import TOPIC_CONFIGS
from protocol.kafka.error_codes import ErrorCode

MAX_NAME_LENGTH = 249
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def check_topic_name(name: str) -> None:
    if not name or name in (".", "..") or len(name) > MAX_NAME_LENGTH or not LEGAL_NAME.fullmatch(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} is illegal: use up to {MAX_NAME_LENGTH} of [a-zA-Z0-9._-]")


@dataclass
class PartitionState:
    """What the journal keeps of a partition."""

    address: str  # the Dafka partition (producer) UUID
    log_start_offset: int = 0
    # The Dafka sequence of the batch holding the log start: the stores may
    # discard every record below it, so start-up reads from here.
    first_sequence: int = 0


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    replication_factor: int
    partition_states: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)  # overrides only
    partitions: list = field(default_factory=list)  # PartitionLog per partition state
    native: bool = False  # published by native Dafka producers, read only (see native_topics.py)

    def config(self, name: str, settings: BrokerSettings) -> str:
        override = self.configs.get(name)
        return override if override is not None else TOPIC_CONFIGS[name].inherited(settings)

    def state(self) -> dict:
        return {
            "type": "topic",
            "name": self.name,
            "id": str(self.topic_id),
            "replication_factor": self.replication_factor,
            "partitions": [[p.address, p.log_start_offset, p.first_sequence] for p in self.partition_states],
            "configs": self.configs,
            **({"native": True} if self.native else {}),  # shared, never journaled so
        }

    @classmethod
    def from_state(cls, state: dict) -> Topic:
        return cls(
            name=state["name"],
            topic_id=uuid.UUID(state["id"]),
            replication_factor=state["replication_factor"],
            partition_states=[PartitionState(*p) for p in state["partitions"]],  # older journals: no first_sequence
            configs=dict(state["configs"]),
            native=state.get("native", False),
        )
