"""Record data by reference: the pieces of a response are the bytes of its copy."""

import struct

from hypothesis import given
from hypothesis import strategies as st

from protocol.kafka import Fragments, by_name, decode_response, encode_response, encode_response_pieces

FETCH = by_name("Fetch")
# Large parts (referenced, not copied) are slices of a pattern: random kilobytes would exhaust hypothesis.
PATTERN = bytes(i % 251 for i in range(10_000))
large_part = st.builds(lambda size, start: PATTERN[start : start + size], st.integers(4096, 9000),
                       st.integers(0, 1000))
parts_strategy = st.lists(st.binary(max_size=200) | large_part, max_size=6)


def fetch_response(records_by_partition):
    Partition = FETCH.Response.Responses.Partitions
    partitions = [Partition(partition_index=i, high_watermark=7, records=records)
                  for i, records in enumerate(records_by_partition)]
    return FETCH.Response(responses=[FETCH.Response.Responses(topic="t", partitions=partitions)])


@given(st.lists(parts_strategy, min_size=1, max_size=3), st.sampled_from([4, 11, 12, 16]))
def test_pieces_are_the_framed_response(partition_parts, version):
    pieces = encode_response_pieces(FETCH.key, version, 5, fetch_response([Fragments(p) for p in partition_parts]))
    joined = b"".join(bytes(piece) for piece in pieces)
    copied = encode_response(FETCH.key, version, 5, fetch_response([b"".join(p) for p in partition_parts]))
    assert joined == struct.pack(">i", len(copied)) + bytes(copied)
    _, body = decode_response(FETCH.key, version, joined[4:])
    assert [bytes(p.records) for p in body.responses[0].partitions] == [b"".join(p) for p in partition_parts]


def test_large_parts_are_referenced_not_copied():
    big = bytearray(b"a" * 10_000)
    pieces = encode_response_pieces(FETCH.key, 12, 1, fetch_response([Fragments([b"small", big])]))
    assert any(piece.obj is big for piece in pieces if isinstance(piece, memoryview))
