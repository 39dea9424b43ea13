"""The Kafka broker assembled on the mesh: journals, topics, coordinators, and the
services that handlers use.

Start-up order matters: the stores must answer before anything is read (the
gateway must not guess what the mesh holds); the partitions open before the
groups, and the groups before the transactions, whose prepared ones complete
into partitions and groups.

With `chp.servers` the gateway joins a cluster first (cluster_member.py):
the controller starts as a lone gateway does, but leads only the partitions
assigned to it; the others take their topics from the controller. Every
gateway coordinates the groups and transactional ids of the
__consumer_offsets and __transaction_state partitions it leads. ACLs, SCRAM credentials, delegation tokens,
group configs, dynamic broker configs, client quotas and finalized features the controller shares, the others
mirror them and forward changes to it. A controller first carries over to the coordinators' partitions what a
lone gateway's group and transaction journals held (carry_over.py). The dynamic broker configs are replayed first: topics open with the
settings they say. Each gateway measures its own clients' quota rates, for its whole life (`QuotaRates`),
whatever its role.
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

import structlog
import trio
from prometheus_client import REGISTRY

from gateway.acls.acl_store import Acls
from gateway.api.services import Services
from gateway.carry_over import LoneStateCarryOver
from gateway.cluster.cluster_view import ClusterView
from gateway.cluster.leadership import TopicSharing
from gateway.cluster.producer_id_blocks import ProducerIdBlocks
from gateway.cluster.remote_markers import remote_partitions
from gateway.cluster.shared_journals import SharedJournal, follow_journals, serve_journal_changes, shared_entries
from gateway.cluster_member import ClusterMember
from gateway.configs.broker_configs import BrokerConfigs
from gateway.configs.dynamic_configs import DynamicConfigs
from gateway.configs.listener_tls import ListenerTls
from gateway.features.finalized_features import FinalizedFeatures
from gateway.group.group_configs import GroupConfigs
from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.offsets_records import offsets_topic_records
from gateway.group.sharded_groups import ShardedGroups
from gateway.partitions.fetch_sessions import FetchSessions
from gateway.quotas.quota_store import ClientQuotas, QuotaRates
from gateway.security.delegation_token_store import DelegationTokens
from gateway.security.scram_credentials import ScramCredentials
from gateway.server.dispatch import Dispatcher
from gateway.settings.table import BrokerSettings, Settings
from gateway.state_metrics import BrokerStateCollector
from gateway.storage.coordinator_shards import nothing_to_carry
from gateway.storage.discard_directives import DiscardDirectives
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState
from gateway.storage.mesh_storage import MeshStorage
from gateway.topics.internal_logs import InternalLogs
from gateway.topics.topic_registry import TopicRegistry
from gateway.txn.sharded_transactions import ShardedTransactions
from gateway.txn.transaction_records import transaction_state_records
from gateway.txn.txn_coordinator import TransactionCoordinator
from protocol.journal.discard_directive import DISCARD_SUBJECT
from protocol.kafka.coordinator_records import (
    OFFSETS_TOPIC,
    TRANSACTIONS_TOPIC,
)

log = structlog.get_logger()


async def start_broker(nursery: trio.Nursery, settings: Settings, storage: MeshStorage, ports: dict[str, int],
                       dispatcher: Dispatcher, listener_tls: ListenerTls | None = None) -> ClusterMember | None:
    """Recover the broker's state from the mesh and run it in `nursery`; its services go to `dispatcher`, the
    TLS listeners' dynamic configs to `listener_tls`. In a cluster, this gateway's membership (what a
    controlled shutdown goes through)."""
    broker = settings.broker
    await wait_for_stores(broker, storage)
    state = {"settings": settings, "storage": storage, "listener_tls": listener_tls,
             "rates": QuotaRates(broker.quota_window_num, broker.quota_window_size_seconds)}
    if settings.chp.chp_servers:
        member = ClusterMember(settings, ports, dispatcher, storage.live_stores)
        await member.start(nursery, partial(_start_state, **state), partial(_start_follower, **state))
        return member
    cluster = ClusterView(broker)
    cluster.bound(ports)
    dispatcher.services = await _start_state(nursery, cluster, None, **state)
    return None


async def _start_follower(nursery: trio.Nursery, cluster: ClusterView, sharing: TopicSharing,
                          producer_ids: ProducerIdBlocks, *, settings: Settings, storage: MeshStorage,
                          rates: QuotaRates, listener_tls: ListenerTls | None) -> Services:
    """A gateway that is not the controller: its journals are the controller's, never replayed here."""
    broker = settings.broker
    discards = DiscardDirectives(storage, broker.cluster_id)
    # Dynamic broker configs mirrored from the controller, their journal never replayed nor written here
    dynamic = DynamicConfigs(Journal(storage, broker, "configs", discards), broker,
                             SharedJournal(sharing.client, "configs", follows=True), listener_tls)
    dynamic.replace(shared_entries(sharing.client, "configs"))
    topics = TopicRegistry(dynamic.effective, storage, Journal(storage, broker, "metadata", discards), discards,
                           sharing, cleaner_backoff_ms=settings.store.log_cleaner_backoff_ms)
    dynamic.watchers.append(topics.reconfigure)
    await nursery.start(topics.run)
    group_configs = GroupConfigs(Journal(storage, broker, "group_configs", discards), broker,
                                 SharedJournal(sharing.client, "group_configs", follows=True))
    groups, transactions = await _coordinators(nursery, broker, topics, cluster, sharing, producer_ids, group_configs)
    # Quotas, ACLs, SCRAM credentials and tokens mirrored from the controller, their journals never replayed
    # nor written here
    quotas = ClientQuotas(Journal(storage, broker, "quotas", discards), rates,
                          SharedJournal(sharing.client, "quotas", follows=True))
    acls = Acls(Journal(storage, broker, "acls", discards), broker, SharedJournal(sharing.client, "acls", follows=True))
    scram_credentials = ScramCredentials(Journal(storage, broker, "credentials", discards),
                                         SharedJournal(sharing.client, "credentials", follows=True))
    tokens = DelegationTokens(Journal(storage, broker, "tokens", discards), broker,
                              SharedJournal(sharing.client, "tokens", follows=True))
    features = FinalizedFeatures(Journal(storage, broker, "features", discards), broker.node_id,
                                 SharedJournal(sharing.client, "features", follows=True))
    features.replace(shared_entries(sharing.client, "features"))
    shared = _shared_states(dynamic, group_configs, quotas, acls, scram_credentials, tokens, features)
    nursery.start_soon(follow_journals, sharing.client, {journal: state.replace for journal, state in shared.items()})
    return _services(settings, cluster, topics, groups, transactions, quotas, acls, scram_credentials, tokens,
                     group_configs, dynamic, features, producer_ids=producer_ids)


async def _coordinators(nursery: trio.Nursery, broker: BrokerSettings, topics: TopicRegistry, cluster: ClusterView,
                        sharing: TopicSharing, producer_ids, group_configs: GroupConfigs,
                        carry_over: LoneStateCarryOver | None = None) -> tuple[ShardedGroups, ShardedTransactions]:
    """In a cluster: the coordinators of the internal topics' partitions this gateway leads, journaled
    on them (each topic made when FindCoordinator first asks for one of its keys); the controller's
    first write there what the lone journals held (`carry_over`)."""
    groups = ShardedGroups(broker, MappingProxyType(topics.topics), group_configs.value,
                           carry_over.before_load("groups") if carry_over else nothing_to_carry)
    transactions = ShardedTransactions(broker, producer_ids, _partition_of(topics, groups, cluster, sharing),
                                       carry_over.before_load("transactions") if carry_over else nothing_to_carry)
    for shards in (groups, transactions):
        await nursery.start(shards.run)
        topics.leadership_watchers.append(shards.leadership_changed)
    topics.deletion_watchers.append(groups.topic_deleted)
    return groups, transactions


async def _start_state(nursery: trio.Nursery, cluster: ClusterView, sharing: TopicSharing | None, *,
                       settings: Settings, storage: MeshStorage, rates: QuotaRates,
                       listener_tls: ListenerTls | None) -> Services:
    broker = settings.broker
    discards = DiscardDirectives(storage, broker.cluster_id)
    journals = {kind: Journal(storage, broker, kind, discards)
                for kind in ("metadata", "groups", "transactions", "quotas", "acls", "credentials", "tokens",
                             "group_configs", "configs", "features")}
    await storage.prefetch_heads(*(journal.subject for journal in journals.values()), DISCARD_SUBJECT)
    await discards.open()  # each journal sends directives for its older generations at replay
    dynamic = DynamicConfigs(journals["configs"], broker, _shared(sharing, "configs"), listener_tls)
    await nursery.start(dynamic.run)
    topics = TopicRegistry(dynamic.effective, storage, journals["metadata"], discards, sharing,
                           cleaner_backoff_ms=settings.store.log_cleaner_backoff_ms)
    dynamic.watchers.append(topics.reconfigure)
    await nursery.start(topics.run)
    group_configs = GroupConfigs(journals["group_configs"], broker, _shared(sharing, "group_configs"))
    await nursery.start(group_configs.run)  # before the groups, whose members' timeouts it sets
    if sharing is None:
        groups, transactions = await _lone_coordinators(nursery, broker, topics, journals, group_configs)
    else:
        carry_over = LoneStateCarryOver(journals)
        await carry_over.load()
        groups, transactions = await _coordinators(nursery, broker, topics, cluster, sharing, topics.producer_ids,
                                                   group_configs, carry_over)
    quotas = ClientQuotas(journals["quotas"], rates, _shared(sharing, "quotas"))
    await nursery.start(quotas.run)
    acls = Acls(journals["acls"], broker, _shared(sharing, "acls"))
    await nursery.start(acls.run)
    scram_credentials = ScramCredentials(journals["credentials"], _shared(sharing, "credentials"))
    await nursery.start(scram_credentials.run)
    tokens = DelegationTokens(journals["tokens"], broker, _shared(sharing, "tokens"))
    await nursery.start(tokens.run)
    features = FinalizedFeatures(journals["features"], broker.node_id, _shared(sharing, "features"))
    await nursery.start(features.run)
    if sharing is not None:
        shared = _shared_states(dynamic, group_configs, quotas, acls, scram_credentials, tokens, features)
        nursery.start_soon(serve_journal_changes, sharing.client,
                           {journal: state.apply_forwarded for journal, state in shared.items()})
    collector = BrokerStateCollector(topics, groups, journals, storage.live_stores)
    REGISTRY.register(collector)
    nursery.start_soon(_undo_when_ended, partial(REGISTRY.unregister, collector),
                       *(journal.close for journal in journals.values()), discards.close)
    log.info("broker_ready", topics=len(topics.topics))
    return _services(settings, cluster, topics, groups, transactions, quotas, acls, scram_credentials, tokens,
                     group_configs, dynamic, features)


def _shared_states(*states: JournaledState) -> dict[str, JournaledState]:
    """The states the controller shares, by the name of their journal."""
    return {state.journal.kind: state for state in states}


async def _undo_when_ended(*undo) -> None:
    """Run `undo` once the state's nursery ends: a controller that steps down stops publishing on
    the journals (its successor hosts them) and may become the controller again later."""
    try:
        await trio.sleep_forever()
    finally:
        for step in undo:
            step()


async def _lone_coordinators(nursery: trio.Nursery, broker: BrokerSettings, topics: TopicRegistry,
                             journals: dict[str, Journal], group_configs: GroupConfigs
                             ) -> tuple[GroupCoordinator, TransactionCoordinator]:
    """Alone: one group and one transaction coordinator, each on its journal, whose changes are
    copied to Kafka's internal topics."""
    internal = InternalLogs(topics)  # told every change replay does not repeat
    await nursery.start(internal.run)
    groups = GroupCoordinator(broker, journals["groups"], MappingProxyType(topics.topics), group_configs.value)
    groups.log.on_change = lambda entry: internal.emit(OFFSETS_TOPIC, offsets_topic_records, entry)
    await nursery.start(groups.run)
    topics.deletion_watchers.append(groups.topic_deleted)
    transactions = TransactionCoordinator(broker, journals["transactions"], topics.producer_ids,
                                          groups.marked(topics.partition))
    transactions.on_change = lambda entry: internal.emit(TRANSACTIONS_TOPIC, transaction_state_records, entry)
    await nursery.start(transactions.run)
    return groups, transactions


def _partition_of(topics: TopicRegistry, groups: ShardedGroups, cluster: ClusterView, sharing: TopicSharing):
    """Where a transaction coordinator of a cluster writes a marker: the partition if led here, else
    the partition as its leader writes it."""
    def topic_id(name: str) -> str | None:
        topic = topics.get(name)
        return None if topic is None else str(topic.topic_id)

    remote = remote_partitions(sharing.client, cluster.leaders, cluster.node_id, topic_id)
    local = groups.marked(topics.partition)
    return lambda name, index: local(name, index) or remote(name, index)


def _shared(sharing: TopicSharing | None, journal: str) -> SharedJournal | None:
    """The controller's sharing of a journal's state, in a cluster."""
    return None if sharing is None else SharedJournal(sharing.client, journal, follows=False)


def _services(settings: Settings, cluster: ClusterView, topics: TopicRegistry, groups, transactions,
              quotas: ClientQuotas, acls: Acls, scram_credentials: ScramCredentials, tokens: DelegationTokens,
              group_configs: GroupConfigs, dynamic: DynamicConfigs, features: FinalizedFeatures,
              producer_ids=None) -> Services:
    return Services(cluster=cluster, topics=topics, groups=groups, transactions=transactions,
                    producer_ids=producer_ids or topics.producer_ids, fetch_sessions=FetchSessions(),
                    broker_configs=BrokerConfigs(settings, cluster, dynamic), log_dir=settings.broker.log_dirs,
                    quotas=quotas, acls=acls, scram_credentials=scram_credentials, delegation_tokens=tokens,
                    group_configs=group_configs, features=features)


async def wait_for_stores(broker: BrokerSettings, storage: MeshStorage) -> None:
    """Until `min.insync.replicas` stores answer, then a while for the others expected, so
    that a store starting with the gateway is there from the first request; a store still
    missing then does not keep the gateway from serving (it catches up when it comes)."""
    await storage.wait_for_stores(broker.min_insync_replicas)
    wanted = max(broker.expected_stores, broker.embedded_stores)
    with trio.move_on_after(broker.expected_stores_wait_ms / 1000):
        await storage.wait_for_stores(wanted)
    if storage.live_stores() < wanted:
        log.warning("serving_without_all_stores", live=storage.live_stores(), expected=wanted,
                    min_insync_replicas=broker.min_insync_replicas)
