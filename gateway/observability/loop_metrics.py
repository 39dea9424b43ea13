"""Metrics updated per request on the event loop's thread, as plain numbers read when scraped.

prometheus_client takes a lock on every update and finds a histogram's bucket in a
Python loop: about 8% of the gateway's CPU per small produce request went there.
These are updated by the one thread that runs the trio loop only (never from worker
threads), so a number needs no lock; the exposition is prometheus_client's own, from
families built at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector


class Number:
    """A counter's or a gauge's value."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount


class Distribution:
    """A histogram's observations: a count per bucket (not cumulative) and their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, int]]:
        buckets, total = [], 0
        for bound, count in zip([*map(str, self.bounds), "+Inf"], self.counts, strict=True):
            total += count
            buckets.append((bound, total))
        return buckets


class _Family(Collector):
    """A metric with its label names, and a child per label values (one without labels)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = ()):
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], object] = {}
        if not self.labelnames:
            self._only = self.labels()
        REGISTRY.register(self)

    def labels(self, *values: str):
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._child()
        return child

    def _child(self):
        raise NotImplementedError

    def collect(self) -> Iterator:
        family = self._family()
        for values, child in list(self._children.items()):
            self._add(family, list(values), child)
        yield family


class LoopCounter(_Family):
    def _child(self) -> Number:
        return Number()

    def inc(self, amount: float = 1) -> None:
        self._only.value += amount

    def _family(self):
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    @staticmethod
    def _add(family, values: list[str], child: Number) -> None:
        family.add_metric(values, child.value)


class LoopGauge(LoopCounter):
    def dec(self, amount: float = 1) -> None:
        self._only.value -= amount

    def _family(self):
        return GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)


class LoopHistogram(_Family):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (), *,
                 buckets: Sequence[float]):
        self.buckets = tuple(buckets)
        super().__init__(name, documentation, labelnames)

    def _child(self) -> Distribution:
        return Distribution(self.buckets)

    def observe(self, value: float) -> None:
        self._only.observe(value)

    def _family(self):
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    @staticmethod
    def _add(family, values: list[str], child: Distribution) -> None:
        family.add_metric(values, child.cumulative(), child.sum)
