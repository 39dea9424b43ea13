"""Damaged input raises DecodeError and nothing else; CRCs catch bit flips."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import DecodeError
from protocol.records import Codec, Record, build_batch, build_message_set, split_records


def unguarded(blob) -> set[int]:
    """Bytes no checksum covers, by design: a v2 batch's base_offset and
    partition_leader_epoch, a legacy message's offset."""
    positions = set()
    start = 0
    for entry in split_records(blob).entries:
        positions |= set(range(start, start + 8))
        if entry.magic == 2:
            positions |= set(range(start + 12, start + 16))
        start += entry.size
    return positions


def read_everything(blob, allow_truncated=False):
    for entry in split_records(blob, allow_truncated=allow_truncated).entries:
        entry.verify_crc()
        entry.records(limit=1 << 20)


def sample_blobs():
    records = [Record(5, 100, b"key", b"value", (("h", b"1"),)), Record(6, 101, None, b"v" * 30)]
    plain = [(r.offset, r.timestamp, r.key, r.value) for r in records]
    for codec in Codec:
        yield build_batch(records, codec=codec)
    for magic in (0, 1):
        for codec in (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
            yield build_message_set([Record(*fields) for fields in plain], magic=magic, codec=codec)


SAMPLES = [pytest.param(blob, unguarded(blob), id=str(index)) for index, blob in enumerate(sample_blobs())]


@pytest.mark.parametrize("blob, skipped", SAMPLES)
@given(data=st.data())
def test_bit_flips_are_detected(blob, skipped, data):
    position = data.draw(st.sampled_from([p for p in range(len(blob)) if p not in skipped]))
    damaged = bytearray(blob)
    damaged[position] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(DecodeError):
        read_everything(damaged)


@pytest.mark.parametrize("blob, skipped", SAMPLES)
@given(data=st.data())
def test_damage_raises_decode_error_only(blob, skipped, data):
    damaged = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    try:
        read_everything(damaged[:cut], allow_truncated=data.draw(st.booleans()))
    except DecodeError:
        pass


@given(blob=st.binary(max_size=200), allow_truncated=st.booleans())
def test_random_bytes_raise_decode_error_only(blob, allow_truncated):
    try:
        read_everything(blob, allow_truncated)
    except DecodeError:
        pass
