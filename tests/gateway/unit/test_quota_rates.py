"""Which quota applies to a client, and the throttle times Kafka's rates give."""

from gateway.quotas.quota_store import ANONYMOUS, ClientQuotas, QuotaRates
from gateway.quotas.rate import Rate
from gateway.quotas.token_bucket import TokenBucket

KEY = "producer_byte_rate"


def test_the_most_specific_entity_wins_in_kafkas_order():
    quotas = ClientQuotas(journal=None, rates=QuotaRates(window_num=11, window_size_s=1))
    levels = [
        ((("client-id", None),), 8), ((("client-id", "app"),), 7), ((("user", None),), 6),
        ((("client-id", None), ("user", None)), 5), ((("client-id", "app"), ("user", None)), 4),
        ((("user", ANONYMOUS),), 3), ((("client-id", None), ("user", ANONYMOUS)), 2),
        ((("client-id", "app"), ("user", ANONYMOUS)), 1),
    ]
    for entity, bound in levels:  # each level added overrides the ones before
        quotas.values[entity] = {KEY: bound}
        found_bound, measured = quotas.quota(KEY, ANONYMOUS, "app")
        assert found_bound == bound
        assert all(name is not None for _, name in measured)  # defaults measured per client
    assert quotas.quota(KEY, ANONYMOUS, "other")[0] == 2
    assert quotas.quota("consumer_byte_rate", ANONYMOUS, "app") is None


def test_a_burst_is_measured_against_the_whole_window():
    rate = Rate(samples=11, window_s=1.0)
    rate.record(1000, 100, now=0.0)
    assert rate.span_s(0.0) == 10.0 and rate.per_second(0.0) == 100.0
    assert rate.throttle_ms(100, 0.0) == 0
    rate.record(1000, 100, now=0.5)  # 2000 over 10.5 s against 100/s: (190.48 - 100) / 100 x 10.5 s
    assert rate.throttle_ms(100, 0.5) == 9500
    assert rate.idle(20.0)


def test_a_token_bucket_holds_the_whole_window_and_refills_at_the_quota():
    bucket = TokenBucket(samples=11, window_s=1.0)
    bucket.record(11, 1.0, now=0.0)
    assert bucket.throttle_ms(1.0, 0.0) == 0
    bucket.record(3, 1.0, now=0.0)
    assert bucket.throttle_ms(1.0, 0.0) == 3000
    assert bucket.throttle_ms(1.0, 1.0) == 2000
    assert not bucket.idle(5.0) and bucket.idle(14.0)


async def test_a_client_keeps_what_was_counted_when_the_quotas_are_rebuilt(mock_clock):
    """A gateway whose role in a cluster changes rebuilds its quotas' values, not its clients' rates (the
    clock stands still: a throttle time is reckoned from the moment asked)."""
    rates = QuotaRates(window_num=11, window_size_s=1)
    as_follower, as_controller = ClientQuotas(journal=None, rates=rates), ClientQuotas(journal=None, rates=rates)
    for quotas in (as_follower, as_controller):
        quotas.values[(("client-id", "app"),)] = {KEY: 100}
    throttle_ms = as_follower.record(KEY, "app", 10_000)
    assert throttle_ms > 0
    assert as_controller.throttle_ms(KEY, "app") == throttle_ms
