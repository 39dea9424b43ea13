"""The cleaner's passes against a model: the newest record of each key below the
cleaning point, tombstones gone below their horizon, nothing else touched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records import Codec, ControlType, Record, RecordBatch, build_batch, build_control_batch
from protocol.records.compaction import Pass, cleaned_content, is_empty_batch, plan_pass

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", None])
VALUES = st.one_of(st.none(), st.binary(min_size=1, max_size=8))
BATCHES = st.lists(st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=5), min_size=1, max_size=12)


def build_log(batches, codec: Codec) -> list[bytes]:
    log, offset = [], 100
    for records in batches:
        built = [Record(offset + i, 1000 + offset + i, key, value) for i, (key, value) in enumerate(records)]
        log.append(build_batch(built, codec=codec))
        offset += len(records) + 1  # a gap between batches, as after earlier cleaning
    return log


def clean(log: list[bytes], cleaning: Pass, capacity: int) -> tuple[list[bytes], int]:
    """One pass, as a store runs it: the new log, and where the pass ended."""
    def entries(start):
        return ((position, log[position]) for position in range(start, len(log)))

    offsets, transactions, end = plan_pass(entries, 0, cleaning, capacity)
    done = cleaning._replace(clean_before=end)
    new = [cleaned_content(content, position, done, offsets, transactions) for position, content in enumerate(log)]
    return [content if cleaned is None else cleaned for content, cleaned in zip(log, new, strict=True)], end


def records_of(log: list[bytes]) -> list[list[Record]]:
    return [RecordBatch(memoryview(content)).records() for content in log]


def model(log: list[bytes], clean_before: int, tombstones_before: int) -> list[list[Record]]:
    batches = records_of(log)
    newest = {r.key: r.offset for batch in batches[:clean_before] for r in batch if r.key is not None}
    return [[r for r in batch if r.key is not None and newest[r.key] == r.offset
             and (r.value is not None or position >= tombstones_before)] if position < clean_before else batch
            for position, batch in enumerate(batches)]


@settings(max_examples=200, deadline=None)
@given(BATCHES, st.data(), st.sampled_from([Codec.NONE, Codec.GZIP, Codec.LZ4, Codec.ZSTD, Codec.SNAPPY]),
       st.integers(5, 40))
def test_passes_until_done_equal_the_model(batches, data, codec, capacity):
    log = build_log(batches, codec)
    clean_before = data.draw(st.integers(0, len(log)))
    tombstones_before = data.draw(st.integers(0, clean_before))
    dirty_from = 0
    while dirty_from < clean_before:  # a small map takes several passes
        log, dirty_from = clean(log, Pass(dirty_from, clean_before, tombstones_before), capacity)
    assert records_of(log) == model(build_log(batches, codec), clean_before, tombstones_before)
    for content, original in zip(log, build_log(batches, codec), strict=True):
        cleaned, before = RecordBatch(memoryview(content)), RecordBatch(memoryview(original))
        cleaned.verify_crc()
        assert (cleaned.base_offset, cleaned.last_offset_delta) == (before.base_offset, before.last_offset_delta)
        assert cleaned.compression in (before.compression, Codec.NONE)
        assert is_empty_batch(content) == (cleaned.record_count == 0)


def test_a_second_pass_changes_nothing():
    log = build_log([[(b"a", b"1"), (b"b", None)], [(b"a", b"2")], [(b"b", b"3")]], Codec.GZIP)
    once, _ = clean(log, Pass(0, 3, 3), 100)
    twice, _ = clean(once, Pass(0, 3, 3), 100)
    assert twice == once
    assert [[r.value for r in batch] for batch in records_of(once)] == [[], [b"2"], [b"3"]]


def transactional(offset: int, key: bytes, value: bytes, producer_id: int) -> bytes:
    return build_batch([Record(offset, 1, key, value)], producer_id=producer_id, producer_epoch=0,
                       base_sequence=0, transactional=True)


def marker(offset: int, kind: ControlType, producer_id: int) -> bytes:
    return build_control_batch(kind, offset=offset, timestamp=1, producer_id=producer_id, producer_epoch=0,
                               coordinator_epoch=0)


def test_aborted_records_go_and_markers_wait_for_their_horizon():
    log = [build_batch([Record(0, 1, b"k", b"plain")]),
           transactional(1, b"k", b"aborted", 7), marker(2, ControlType.ABORT, 7),
           transactional(3, b"j", b"committed", 8), marker(4, ControlType.COMMIT, 8),
           transactional(5, b"k", b"open", 9)]
    cleaned, end = clean(log, Pass(0, 6, 0), 100)
    assert end == 6
    values = [[r.value for r in batch] for batch in records_of(cleaned)]
    # the aborted write neither survives nor supersedes "plain"; the open one is kept and supersedes nothing
    assert values[0] == [b"plain"] and values[1] == [] and values[3] == [b"committed"] and values[5] == [b"open"]
    assert cleaned[2] == log[2] and cleaned[4] == log[4]
    past_horizon, _ = clean(cleaned, Pass(0, 6, 6), 100)
    assert is_empty_batch(past_horizon[2])  # its transaction left nothing: the ABORT marker goes
    assert past_horizon[4] == log[4]  # "committed" still stands for j
    emptied = RecordBatch(memoryview(past_horizon[2]))
    assert (emptied.is_control, emptied.producer_id, emptied.base_offset) == (True, 7, 2)


def test_an_abort_marker_goes_in_the_pass_that_removes_its_records_once_past_its_horizon():
    log = [transactional(0, b"k", b"a1", 7), build_batch([Record(1, 1, b"j", b"plain")]),
           transactional(2, b"j", b"a2", 7), marker(3, ControlType.ABORT, 7),
           transactional(4, b"k", b"c", 7), marker(5, ControlType.COMMIT, 7)]
    cleaned, _ = clean(log, Pass(0, 6, 4), 100)
    assert [is_empty_batch(content) for content in cleaned] == [True, False, True, True, False, False]
    assert records_of(cleaned)[1][0].value == b"plain"  # an aborted record supersedes nothing
    before_horizon, _ = clean(log, Pass(0, 6, 3), 100)
    assert before_horizon[3] == log[3] and is_empty_batch(before_horizon[2])


def test_a_committed_marker_goes_once_its_records_are_superseded():
    log = [transactional(0, b"j", b"committed", 8), marker(1, ControlType.COMMIT, 8),
           build_batch([Record(2, 1, b"j", b"newer")])]
    cleaned, _ = clean(log, Pass(0, 3, 3), 100)
    assert is_empty_batch(cleaned[0]) and is_empty_batch(cleaned[1])
    emptied = RecordBatch(memoryview(cleaned[1]))
    assert emptied.is_control and emptied.is_transactional and emptied.producer_id == 8
    emptied.verify_crc()
