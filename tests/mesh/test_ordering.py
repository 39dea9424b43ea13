"""PartitionSequencer: skipping to a log start below which the records were discarded; FETCHes
asked again when their answer does not come."""

from gateway.mesh.ordering import FETCH_RETRY_S, PartitionSequencer


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


def test_a_lost_fetch_is_asked_again_while_live_records_keep_coming():
    """Records published before a store subscribed are lost, and so may be its first FETCH;
    live records arriving every 0.2 s must not put off asking again for ever."""
    sequencer = PartitionSequencer(0)
    assert sequencer.offer(16, b"x") == []
    assert sequencer.fetch_due(now=0.0) == (0, 16)  # lost
    asked, now = [], 0.0
    for sequence in range(17, 30):
        now += 0.2
        assert sequencer.offer(sequence, b"x") == []
        asked.append(sequencer.fetch_due(now))
    assert (0, 16) in asked
    assert asked.index((0, 16)) * 0.2 <= FETCH_RETRY_S + 0.2


def test_a_streaming_answer_is_not_asked_again():
    sequencer = PartitionSequencer(0)
    sequencer.note_head(2999)
    assert sequencer.fetch_due(now=0.0) == (0, 1000)
    now = 0.0
    for sequence in range(0, 2000):
        now += 0.001
        sequencer.offer(sequence, b"x")
        due = sequencer.fetch_due(now)
        assert due is None or due[0] > sequence, due  # only ranges ahead of what came
