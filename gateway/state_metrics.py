"""The gauges Prometheus reads from the broker's state when it scrapes: partitions, stores,
journals and consumer-group lag.

A partition is under min.insync.replicas when fewer stores than its topic's
min.insync.replicas are connected: acks=all produce to it cannot succeed.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gateway.group.group_coordinator import GroupCoordinator
from gateway.storage.journal import Journal
from gateway.topics.topic_registry import TopicRegistry


class BrokerStateCollector(Collector):
    def __init__(self, topics: TopicRegistry, groups: GroupCoordinator, journals: dict[str, Journal],
                 live_stores: Callable[[], int]):
        self.topics = topics
        self.groups = groups
        self.journals = journals
        self.live_stores = live_stores

    def collect(self):
        yield from self._partitions()
        yield from self._journals()
        yield self._lag()

    def _partitions(self):
        live = self.live_stores()
        counts = GaugeMetricFamily("dafka_gateway_partitions", "Partitions served, by kind", labels=["kind"])
        under = GaugeMetricFamily("dafka_gateway_partitions_under_min_insync",
                                  "Partitions whose topic asks more in-sync stores than are connected")
        stores = GaugeMetricFamily("dafka_gateway_live_stores", "Stores connected to the gateway both ways")
        topics = [self.topics.get(name) for name in self.topics.names()]
        gateway = [t for t in topics if not t.native]
        counts.add_metric(["gateway"], sum(len(t.partitions) for t in gateway))
        counts.add_metric(["native"], sum(len(t.partitions) for t in topics if t.native))
        under.add_metric([], sum(len(t.partitions) for t in gateway
                                 if int(self.topics.config(t, "min.insync.replicas")) > live))
        stores.add_metric([], live)
        return counts, under, stores

    def _journals(self):
        entries = GaugeMetricFamily("dafka_gateway_journal_entries", "Entries a replay of the journal reads",
                                    labels=["journal"])
        size = GaugeMetricFamily("dafka_gateway_journal_bytes", "Bytes a replay of the journal reads",
                                 labels=["journal"])
        for kind, journal in self.journals.items():
            count, total = journal.size()
            entries.add_metric([kind], count)
            size.add_metric([kind], total)
        return entries, size

    def _lag(self):
        lag = GaugeMetricFamily("dafka_gateway_consumer_group_lag",
                                "Records between a group's committed offset and the high watermark",
                                labels=["group", "topic", "partition"])
        for group_id in self.groups.group_ids():
            for (topic, number), committed in self.groups.fetch_offsets(group_id).items():
                partition = self.topics.partition(topic, number)
                if partition is not None:
                    lag.add_metric([group_id, topic, str(number)], max(partition.high_watermark - committed.offset, 0))
        return lag
