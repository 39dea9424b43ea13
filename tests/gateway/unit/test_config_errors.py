"""Topic config refusals in Kafka's words, for what clients cannot send through their admin APIs."""

import pytest

from gateway.topics.topic_configs import InvalidConfig, checked_overrides


def test_null_values_are_named_together_before_anything_else_is_checked():
    with pytest.raises(InvalidConfig, match="^Null value not supported for topic configs: segment.bytes,segment.ms$"):
        checked_overrides({"segment.jitter.ms": "10", "segment.bytes": None, "no.such.config": "1",
                           "segment.ms": None})


def test_values_are_kept_in_kafkas_spelling():
    assert checked_overrides({"preallocate": "TRUE", "retention.ms": " +5 "}) == {"preallocate": "true",
                                                                                   "retention.ms": "5"}
