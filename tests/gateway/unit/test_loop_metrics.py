"""Loop metrics expose what prometheus_client's would: cumulative buckets, value <= bound."""

from prometheus_client import REGISTRY, generate_latest

from gateway.observability.loop_metrics import LoopCounter, LoopGauge, LoopHistogram


def test_a_histogram_counts_each_value_in_the_first_bucket_whose_bound_it_does_not_exceed():
    histogram = LoopHistogram("loop_metrics_test_seconds", "test", ["api"], buckets=(0.1, 1.0))
    try:
        for value in (0.05, 0.1, 0.5, 7.0):
            histogram.labels("Produce").observe(value)
        sample = lambda suffix, **labels: REGISTRY.get_sample_value(f"loop_metrics_test_seconds{suffix}",  # noqa: E731
                                                                    {"api": "Produce", **labels})
        assert [sample("_bucket", le=bound) for bound in ("0.1", "1.0", "+Inf")] == [2, 3, 4]
        assert (sample("_count"), sample("_sum")) == (4, 7.65)
    finally:
        REGISTRY.unregister(histogram)


def test_counters_and_gauges_are_exposed_under_prometheus_names():
    counter = LoopCounter("loop_metrics_test_bytes", "test", ["topic"])
    gauge = LoopGauge("loop_metrics_test_held", "test")
    try:
        counter.labels("a").inc(5)
        gauge.inc(10)
        gauge.dec(3)
        text = generate_latest().decode()
        assert 'loop_metrics_test_bytes_total{topic="a"} 5.0' in text
        assert "# TYPE loop_metrics_test_held gauge\nloop_metrics_test_held 7.0" in text
    finally:
        REGISTRY.unregister(counter)
        REGISTRY.unregister(gauge)
