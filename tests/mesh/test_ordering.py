"""PartitionSequencer: skipping to a log start below which the records were discarded."""

from gateway.mesh.ordering import PartitionSequencer


def test_skip_delivers_what_is_buffered_from_the_log_start_and_fetches_no_lower():
    sequencer = PartitionSequencer(5)
    for sequence in (8, 20, 21, 23):
        assert sequencer.offer(sequence, b"x") == []
    assert sequencer.fetch_due(now=0.0) == (5, 3)
    assert sequencer.skip_to(20) == [(20, b"x"), (21, b"x")]
    assert sequencer.fetch_due(now=0.0) == (22, 1)  # asked at once, though a FETCH below was outstanding
    assert sequencer.skip_to(10) == []
    assert sequencer.next_sequence == 22


def test_skip_beyond_everything_known_leaves_nothing_to_fetch():
    sequencer = PartitionSequencer(0)
    sequencer.note_head(4)
    assert sequencer.skip_to(30) == []
    assert not sequencer.behind
    assert sequencer.offer(30, b"y") == [(30, b"y")]
