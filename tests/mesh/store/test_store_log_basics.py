"""StoreLog: appends, reads and reopening."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_log_helpers import ADDRESS, fill, sequences

from gateway.mesh.store.store_log import Entry, StoreLog, subject_key

OTHER = "FEDCBA9876543210FEDCBA9876543210"


def test_empty_store(store):
    assert store.partitions() == []
    assert store.first("t", ADDRESS) is None
    assert store.head("t", ADDRESS) is None
    assert list(store.read("t", ADDRESS, 0, 10, 100)) == []


def test_round_trip_across_segments(store):
    fill(store, "t", 500, start=7)
    assert store.partitions() == [("t", ADDRESS)]
    assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (7, 506)
    assert sequences(store, "t", 7) == list(range(7, 507))
    assert sequences(store, "t", 300) == list(range(300, 507))
    assert sequences(store, "t", 507) == []
    assert sequences(store, "t", 6) == []


def test_entry_fields(store):
    store.append("t", ADDRESS, 0, b"abc", 1_700_000_000_123)
    assert list(store.read("t", ADDRESS, 0, 1, 1)) == [Entry(0, 1_700_000_000_123, b"abc")]


def test_sequence_must_follow_head(store):
    store.append("t", ADDRESS, 10, b"a", 0)
    for wrong in (10, 12, 0):
        with pytest.raises(ValueError):
            store.append("t", ADDRESS, wrong, b"b", 0)
    store.append("t", ADDRESS, 11, b"b", 0)
    assert store.head("t", ADDRESS) == 11


def test_partitions_are_separate(store):
    fill(store, "t", 20)
    fill(store, "t", 5, start=100, address=OTHER)
    fill(store, "u", 3)
    assert sorted(store.partitions()) == [("t", ADDRESS), ("t", OTHER), ("u", ADDRESS)]
    assert sequences(store, "t", address=OTHER, start=100) == list(range(100, 105))
    assert sequences(store, "u") == [0, 1, 2]


def test_reopen_keeps_everything_and_continues(tmp_path):
    with StoreLog(tmp_path, segment_bytes=2048) as store:
        fill(store, "t", 300)
    with StoreLog(tmp_path, segment_bytes=2048) as store:
        assert (store.first("t", ADDRESS), store.head("t", ADDRESS)) == (0, 299)
        fill(store, "t", 100, start=300)
    with StoreLog(tmp_path, segment_bytes=2048) as store:
        assert sequences(store, "t") == list(range(400))


def test_second_opener_is_refused(tmp_path):
    with StoreLog(tmp_path):
        with pytest.raises(RuntimeError):
            StoreLog(tmp_path)


def test_read_limits(store):
    for sequence in range(10):
        store.append("t", ADDRESS, sequence, bytes(100), 0)
    assert [e.sequence for e in store.read("t", ADDRESS, 2, 3, 10**6)] == [2, 3, 4]
    assert [e.sequence for e in store.read("t", ADDRESS, 2, 100, 250)] == [2, 3]
    assert [e.sequence for e in store.read("t", ADDRESS, 2, 100, 300)] == [2, 3, 4]
    assert [e.sequence for e in store.read("t", ADDRESS, 2, 100, 1)] == [2]
    assert [e.sequence for e in store.read("t", ADDRESS, 9, 100, 0)] == [9]
    assert list(store.read("t", ADDRESS, 2, 0, 10**6)) == []


def test_first_entry_comes_even_when_bigger_than_max_bytes(store):
    store.append("t", ADDRESS, 0, bytes(5000), 0)
    store.append("t", ADDRESS, 1, bytes(10), 0)
    assert [len(e.content) for e in store.read("t", ADDRESS, 0, 10, 100)] == [5000]
    assert [len(e.content) for e in store.read("t", ADDRESS, 1, 10, 100)] == [10]


def test_large_contents_and_memoryviews(tmp_path):
    big = os.urandom(5 * 1024 * 1024)
    with StoreLog(tmp_path) as store:
        store.append("t", ADDRESS, 0, memoryview(big), 1)
        store.append("t", ADDRESS, 1, memoryview(big)[10:20], 2)
        store.append("t", ADDRESS, 2, bytearray(b"xy"), 3)
        store.append("t", ADDRESS, 3, big, 4)
    with StoreLog(tmp_path) as store:
        contents = [e.content for e in store.read("t", ADDRESS, 0, 10, 10**9)]
        assert contents == [big, big[10:20], b"xy", big]
        assert [e.content for e in store.read("t", ADDRESS, 1, 2, 10**9)] == [big[10:20], b"xy"]


WEIRD_SUBJECTS = ["", "/", "..", "../../etc", "a/b\\c", "topic with spaces", "日本語のトピック",
                  "\x01\x7f\n", "x" * 100, "y" * 101, "é" * 127, "z" * 255]


def test_weird_subjects(tmp_path):
    with StoreLog(tmp_path) as store:
        for number, subject in enumerate(WEIRD_SUBJECTS):
            store.append(subject, ADDRESS, number, subject.encode(), 0)
    assert sorted(os.listdir(tmp_path)) == sorted([".lock", *{subject_key(s) for s in WEIRD_SUBJECTS}])
    with StoreLog(tmp_path) as store:
        assert sorted(store.partitions()) == sorted((s, ADDRESS) for s in WEIRD_SUBJECTS)
        for number, subject in enumerate(WEIRD_SUBJECTS):
            assert list(store.read(subject, ADDRESS, number, 1, 1)) == [Entry(number, 0, subject.encode())]


@pytest.mark.parametrize("subject", ["a\0b", "x" * 256, "é" * 128])
def test_invalid_subjects(store, subject):
    with pytest.raises(ValueError):
        store.append(subject, ADDRESS, 0, b"", 0)


@pytest.mark.parametrize("address", ["0123456789abcdef0123456789abcdef", "../" + "A" * 29, "A" * 31, "A" * 33])
def test_invalid_addresses(store, address):
    with pytest.raises(ValueError):
        store.append("t", address, 0, b"", 0)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 70_000), min_size=1, max_size=30), start=st.integers(0, 2**63),
       segment_bytes=st.sampled_from([1, 500, 100_000]), reopen_at=st.integers(0, 30))
def test_round_trip_property(tmp_path_factory, sizes, start, segment_bytes, reopen_at):
    directory = tmp_path_factory.mktemp("log")
    contents = [os.urandom(size) for size in sizes]
    store = StoreLog(directory, segment_bytes=segment_bytes)
    for number, content in enumerate(contents):
        if number == reopen_at:
            store.close()
            store = StoreLog(directory, segment_bytes=segment_bytes)
        store.append("t", ADDRESS, start + number, content, number)
    with store:
        read = list(store.read("t", ADDRESS, start, 10**6, 10**9))
        assert read == [Entry(start + n, n, c) for n, c in enumerate(contents)]
        middle = start + len(contents) // 2
        assert [e.sequence for e in store.read("t", ADDRESS, middle, 10**6, 10**9)] == list(
            range(middle, start + len(contents)))

