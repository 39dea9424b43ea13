"""What the gateway tells the stores they may clean of a compacted partition."""

from gateway.partitions.cleaning_points import CleaningPoints, CompactionConfig
from gateway.partitions.offset_index import OffsetIndex

CONFIG = CompactionConfig(segment_ms=1000, segment_bytes=10**6, min_lag_ms=0, max_lag_ms=2**63 - 1,
                          delete_retention_ms=5000, dirty_ratio=0.5)


def index(batches: int, timestamp_ms: int = 0, size: int = 100) -> OffsetIndex:
    offsets = OffsetIndex()
    for sequence in range(batches):
        offsets.add(sequence, sequence * 2, 2, timestamp_ms, size)
    return offsets


def test_the_active_segment_rolls_at_the_first_batch_after_segment_ms():
    points, offsets = CleaningPoints(), index(5)
    assert points.advance(offsets, 5, CONFIG, now_ms=0).clean_before == 0
    assert points.advance(offsets, 5, CONFIG, now_ms=999).clean_before == 0
    assert points.advance(offsets, 5, CONFIG, now_ms=1000).clean_before == 0  # old enough, no batch since
    assert points.advance(offsets, 5, CONFIG, now_ms=5000).clean_before == 0
    offsets.add(5, 10, 2, 0, 100)
    assert points.advance(offsets, 6, CONFIG, now_ms=5001).clean_before == 5  # the new batch is the active segment


def test_segment_bytes_rolls_too_and_the_stable_end_and_lag_bound_it():
    points, offsets = CleaningPoints(), index(5, size=400)
    config = CONFIG._replace(segment_bytes=1000)
    points.advance(offsets, 3, config, now_ms=0)
    offsets.add(5, 10, 2, 0, 400)
    assert points.advance(offsets, 3, config, now_ms=1).clean_before == 3  # an open transaction at sequence 3
    lagging = CleaningPoints()
    lagging.advance(offsets, 6, config._replace(min_lag_ms=100), now_ms=0)
    offsets.add(6, 12, 2, 50, 400)
    assert lagging.advance(offsets, 7, config._replace(min_lag_ms=100), now_ms=120).clean_before == 6
    assert lagging.advance(offsets, 7, config._replace(min_lag_ms=100), now_ms=149).clean_before == 6


def test_tombstones_may_go_below_what_was_cleanable_delete_retention_ms_ago():
    points, offsets = CleaningPoints(), index(5)
    points.advance(offsets, 5, CONFIG, now_ms=0)
    points.advance(offsets, 5, CONFIG, now_ms=1000)
    offsets.add(5, 10, 2, 0, 100)
    assert points.advance(offsets, 6, CONFIG, now_ms=2000)[:2] == (5, 0)
    assert points.advance(offsets, 6, CONFIG, now_ms=6999)[:2] == (5, 0)
    assert points.advance(offsets, 6, CONFIG, now_ms=7000)[:2] == (5, 5)


def test_max_compaction_lag_forces_cleaning_of_old_batches():
    points, offsets = CleaningPoints(), index(5, timestamp_ms=0)
    config = CONFIG._replace(max_lag_ms=100)
    points.advance(offsets, 5, config, now_ms=0)
    points.advance(offsets, 5, config, now_ms=1000)
    offsets.add(5, 10, 2, 2000, 100)
    compaction = points.advance(offsets, 6, config, now_ms=2000)
    assert (compaction.clean_before, compaction.must_clean_before) == (5, 5)


def test_segment_bytes_cuts_where_kafkas_appends_would_with_no_batch_after():
    """Batches of 400 bytes in segments of 1000: [0, 1], [2, 3], [4], each cut at the batch that
    would take it past segment.bytes, though no batch came after the check."""
    points, offsets = CleaningPoints(), index(5, size=400)
    assert points.advance(offsets, 5, CONFIG._replace(segment_bytes=1000), now_ms=0).clean_before == 4
    assert points.advance(offsets, 5, CONFIG._replace(segment_bytes=800), now_ms=1).clean_before == 4
