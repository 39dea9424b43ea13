"""What handlers may use of the rest of the gateway: one small interface per service.

A handler is called as `handler(request, services)` and reaches the
gateway's state only through these interfaces: topics and their partitions,
the group and transaction coordinators, producer ids, fetch sessions, the
cluster view and the broker's configs. Each component implements its
interface; none lets a handler touch another component's state. This is the
seam where a cluster of gateways plugs in (partition leadership, coordinator
ownership, membership).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import trio

from gateway.acls.authorizer import Who
from gateway.acls.model import AclBinding, AclFilter, Operation, ResourceType
from gateway.cluster.cluster_view import BrokerEndpoint
from gateway.configs.broker_configs import BrokerConfig, Synonym
from gateway.features.levels import Update
from gateway.group.classic import ClassicGroup, JoinResult, SyncResult
from gateway.group.classic_membership import JoinRequest
from gateway.group.committed_offsets import Committed
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.consumer_membership import HeartbeatResult
from gateway.group.consumer_requests import HeartbeatRequest
from gateway.group.group_configs import GroupConfig
from gateway.group.timer import Reply
from gateway.partitions.fetch_sessions import FetchSession
from gateway.partitions.producer_state import ActiveProducer
from gateway.partitions.recent_batches import StoredBatch
from gateway.partitions.transaction_index import AbortedTransaction
from gateway.quotas.entities import Entity
from gateway.security.delegation_token_store import TokenInfo
from gateway.server.principal import KafkaPrincipal
from gateway.topics.topic import Topic
from gateway.txn.txn_metadata import TransactionMetadata
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch
from protocol.sasl.scram import ScramCredential, ScramMechanism

T = TypeVar("T")

class Cluster(Protocol):
    """The cluster's brokers, as clients connected through a listener reach them."""

    cluster_id: str
    node_id: int

    @property
    def controller_id(self) -> int: ...

    def brokers(self, listener: str) -> list[BrokerEndpoint]: ...

    def coordinator(self, listener: str) -> BrokerEndpoint | None: ...

    def leader(self, topic: Topic, index: int) -> tuple[int, int]: ...

    def replicas(self, topic: Topic, index: int) -> tuple[list[int], list[int]]:
        """(replicas, in-sync replicas) of a partition, its preferred leader first."""

    def leadership(self, topic: Topic) -> Callable[[int], tuple[int, int, list[int], list[int]]]:
        """index -> (leader, leader epoch, replicas, in-sync replicas) of the topic's partitions."""

    async def elect(self, topic: Topic, index: int, election: int) -> ErrorCode:
        """ElectLeaders' outcome for a partition (0: preferred, 1: unclean)."""

    async def reassign(self, topic: Topic, index: int, replicas: list[int]) -> tuple[ErrorCode, str | None]:
        """Replace a partition's replicas: the outcome, and why where refused."""


class Partition(Protocol):
    """A partition: a PartitionLog, or a NativePartition (read only: it refuses
    `append`, so handlers never reach the write side's other methods for it)."""

    topic: str
    index: int
    leader_epoch: int
    log_start_offset: int
    high_watermark: int

    @property
    def next_offset(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None: ...

    def end_of_epoch(self, epoch: int) -> tuple[int, int]: ...

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None,
                   min_one: bool = True) -> list[StoredBatch]: ...

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTransaction]: ...

    def notify_on_data(self, waiter: trio.Event) -> None: ...

    def forget_waiter(self, waiter: trio.Event) -> None: ...

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None: ...

    async def offset_of_max_timestamp(self) -> tuple[int, int] | None: ...

    def move_log_start(self, offset: int) -> bool: ...

    def active_producers(self) -> list[ActiveProducer]: ...

    async def append(self, batch: RecordBatch, *, log_append_time: int | None = None,
                     room_timeout_s: float = ...) -> tuple[int, int]: ...

    def in_sync_stores(self) -> int: ...

    def stores_for(self, acks: int) -> int: ...

    def is_stored(self, sequence: int, stores: int) -> bool: ...

    async def wait_stored(self, sequence: int, stores: int) -> None: ...

    def call_when_stored(self, sequence: int, stores: int, callback: Callable[[], None]) -> None: ...


class Topics(Protocol):
    """The topics and their partitions."""

    def get(self, name: str) -> Topic | None: ...

    def by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def names(self) -> list[str]: ...

    def partition(self, name: str, number: int) -> Partition | None: ...

    def config(self, topic: Topic, name: str) -> str: ...

    def derived(self, topic: Topic, compute: Callable[[Callable[[str], str]], T]) -> T: ...

    def inherited(self, name: str) -> str: ...

    async def auto_create(self, name: str) -> Topic | None: ...

    async def internal(self, name: str) -> Topic: ...

    async def create(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: dict[str, str | None] | None = None, *, validate_only: bool = False) -> Topic: ...

    async def delete(self, name: str) -> None: ...

    async def add_partitions(self, name: str, count: int, *, validate_only: bool = False) -> None: ...

    async def led(self, topic: Topic, deadline: float) -> bool:
        """Whether each of the topic's partitions has a leader by `deadline` (trio's clock), waiting
        until then (at once alone)."""

    async def replace_configs(self, name: str, overrides: dict[str, str], *, validate_only: bool = False) -> None: ...

    async def change_configs(self, name: str, change: Callable[[dict[str, str]], dict[str, str | None]], *,
                             validate_only: bool = False) -> None: ...

    async def save_log_start(self, topic: Topic) -> None: ...

    async def checkpoint_all(self) -> None: ...  # at a clean stop: start-up then reads no batch


class Groups(Protocol):
    """The group coordinator: membership of classic and consumer groups, and committed offsets."""

    async def join(self, request: JoinRequest) -> Reply[JoinResult]: ...

    async def sync(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> Reply[SyncResult]: ...

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> ErrorCode: ...

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]: ...

    async def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult: ...

    def consumer_group(self, group_id: str) -> ConsumerGroup: ...

    def group(self, group_id: str) -> ClassicGroup | ConsumerGroup | None: ...

    def group_ids(self) -> list[str]: ...

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]: ...

    async def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                             version: int, commits: dict[tuple[str, int], Committed]) -> None: ...

    def validate_transactional_commit(self, group_id: str, member_id: str, instance_id: str | None,
                                      generation: int) -> None: ...

    async def commit_transactional_offsets(self, group_id: str, producer: tuple[int, int],
                                           commits: dict[tuple[str, int], Committed]) -> None: ...

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool: ...

    def marked(self, partition_of: Callable[[str, int], object | None]) -> Callable[[str, int], object | None]: ...

    def fetch_offsets(self, group_id: str) -> dict[tuple[str, int], Committed]: ...

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None: ...

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                             ) -> dict[tuple[str, int], ErrorCode]: ...


class Transactions(Protocol):
    """The transaction coordinator (KIP-98)."""

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> TransactionMetadata: ...

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: set[tuple[str, int]]) -> None: ...

    async def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None: ...

    async def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> None: ...

    def check_produce(self, transactional_id: str, producer_id: int, epoch: int, topic: str, partition: int
                      ) -> None: ...

    def check_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None: ...

    def transaction(self, transactional_id: str) -> TransactionMetadata | None: ...

    def transactions(self) -> list[TransactionMetadata]: ...


class ProducerIds(Protocol):
    async def allocate(self) -> int: ...


class FetchSessions(Protocol):
    """KIP-227's session cache."""

    def start(self) -> FetchSession: ...

    def close(self, session_id: int) -> None: ...

    def resume(self, session_id: int, epoch: int) -> FetchSession: ...


class Quotas(Protocol):
    """The client quotas (KIP-546) and the rates they bound."""

    async def alter(self, entity: Entity, changes: dict[str, float | None]) -> None: ...

    def describe(self, exact: dict[str, str | None], any_name: set[str], strict: bool
                 ) -> list[tuple[Entity, dict[str, float]]]: ...

    def record(self, key: str, client_id: str | None, value: float, user: str) -> int: ...

    def throttle_ms(self, key: str, client_id: str | None, user: str) -> int: ...

    def unrecord(self, key: str, client_id: str | None, value: float, user: str) -> None: ...

    def window_bytes(self, key: str, client_id: str | None, user: str) -> float: ...


class ScramCredentialStore(Protocol):
    """Users' SCRAM credentials (KIP-554)."""

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None: ...

    def users(self) -> dict[str, list[tuple[int, int]]]: ...

    def has(self, user: str, mechanism: ScramMechanism) -> bool: ...

    async def alter(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None: ...


class DelegationTokenStore(Protocol):
    """Delegation tokens (KIP-48); creating, renewing and expiring raise the KafkaError Kafka's controller answers."""

    enabled: bool
    tokens: dict[str, TokenInfo]

    def hmac(self, token_id: str) -> bytes: ...

    async def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal, renewers: list[KafkaPrincipal],
                     max_lifetime_ms: int) -> TokenInfo: ...

    async def renew(self, principal: KafkaPrincipal, token_hmac: bytes, period_ms: int) -> int: ...

    async def expire(self, principal: KafkaPrincipal, token_hmac: bytes, period_ms: int) -> int: ...


class Acls(Protocol):
    """The ACLs and the authorizer's decisions over them; `enabled` once an authorizer is configured."""

    enabled: bool

    def authorize(self, who: Who, operation: Operation, resource_type: ResourceType, name: str) -> bool: ...

    def authorize_any(self, who: Who, operation: Operation, resource_type: ResourceType) -> bool: ...

    def describe(self, selected: AclFilter) -> list[AclBinding]: ...

    async def create(self, bindings: list[AclBinding]) -> None: ...

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]: ...


class DynamicBrokerConfigs(Protocol):
    async def alter(self, resource: str, *, replaced: dict[str, str] | None = None,
                    operations: list[tuple[str, int, str | None]] = (), validate_only: bool = False) -> None: ...


class GroupConfigStore(Protocol):
    """Groups' config overrides (GROUP config resources)."""

    def of(self, group_id: str) -> dict[str, str]: ...

    def value(self, group_id: str, config: GroupConfig) -> int: ...

    def groups(self) -> list[str]: ...

    async def alter(self, group_id: str, changes: dict[str, str | None], *, replace: bool,
                    validate_only: bool) -> None: ...


class Features(Protocol):
    """The cluster's finalized feature levels (KIP-584) and their epoch; `update` raises Kafka's refusal."""

    levels: dict[str, int]
    epoch: int

    def level(self, feature: str) -> int: ...

    async def update(self, updates: list[Update], *, validate_only: bool) -> None: ...


class BrokerConfigs(Protocol):
    dynamic: DynamicBrokerConfigs

    def entries(self) -> list[BrokerConfig]: ...

    def get(self, name: str) -> BrokerConfig | None: ...

    def default_entries(self) -> list[BrokerConfig]: ...

    def synonyms(self, names: tuple[str, ...]) -> tuple[Synonym, ...]: ...


@dataclass(frozen=True)
class Services:
    cluster: Cluster
    topics: Topics
    groups: Groups
    transactions: Transactions
    producer_ids: ProducerIds
    fetch_sessions: FetchSessions
    broker_configs: BrokerConfigs
    log_dir: Path  # this broker's one log directory, as DescribeLogDirs reports it
    quotas: Quotas
    acls: Acls
    scram_credentials: ScramCredentialStore
    group_configs: GroupConfigStore
    delegation_tokens: DelegationTokenStore
    features: Features
