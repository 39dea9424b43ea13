"""Hypothesis strategies shared by the records tests."""

from hypothesis import strategies as st

from protocol.records import Record

timestamps = st.one_of(st.just(-1), st.integers(0, 1 << 42))
nullable_bytes = st.one_of(st.none(), st.binary(max_size=40))
header_lists = st.lists(st.tuples(st.text(max_size=6), nullable_bytes), max_size=3).map(tuple)


def record_lists(*, with_headers: bool = True) -> st.SearchStrategy[list[Record]]:
    """Records at consecutive offsets from a random base."""
    headers = header_lists if with_headers else st.just(())
    fields = st.lists(st.tuples(timestamps, nullable_bytes, nullable_bytes, headers), min_size=1, max_size=10)
    return st.builds(
        lambda base, rows: [Record(base + index, *row) for index, row in enumerate(rows)],
        st.integers(0, 1 << 40),
        fields,
    )
