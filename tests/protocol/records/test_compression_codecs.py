import gzip
import os

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import DecodeError
from protocol.records import Codec, compress, decompress
from protocol.records.compression import XERIAL_MAGIC

CODECS = list(Codec)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1, 2])
@settings(max_examples=30)
@given(data=st.binary(max_size=4096))
def test_round_trip(codec, magic, data):
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec", CODECS)
def test_bomb_is_refused(codec):
    data = compress(codec, bytes(4 * 1024 * 1024))
    with pytest.raises(DecodeError):
        decompress(codec, data, limit=1024 * 1024)


def test_snappy_writes_xerial_in_32k_blocks():
    data = os.urandom(100_000)
    framed = compress(Codec.SNAPPY, data)
    assert framed.startswith(XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(Codec.SNAPPY, framed) == data


def test_snappy_reads_a_raw_block():
    assert decompress(Codec.SNAPPY, snappy.compress(b"raw block" * 50)) == b"raw block" * 50


def test_gzip_reads_concatenated_members():
    data = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress(Codec.GZIP, data) == b"one two"


def test_zstd_without_content_size():
    data = zstandard.ZstdCompressor(write_content_size=False).compress(b"z" * 100_000)
    assert decompress(Codec.ZSTD, data) == b"z" * 100_000


def test_lz4_magic_0_uses_the_broken_header_checksum():
    old = compress(Codec.LZ4, b"payload" * 100, magic=0)
    with pytest.raises(DecodeError):
        decompress(Codec.LZ4, old, magic=2)
    assert decompress(Codec.LZ4, old, magic=0) == b"payload" * 100
    # and magic 0 readers still accept correct frames
    assert decompress(Codec.LZ4, lz4.frame.compress(b"x" * 10), magic=0) == b"x" * 10


def test_lz4_frames_have_independent_blocks():
    frame = compress(Codec.LZ4, os.urandom(200_000))
    assert lz4.frame.get_frame_info(frame)["block_linked"] is False


@pytest.mark.parametrize("codec", [c for c in CODECS if c != Codec.NONE])
@pytest.mark.parametrize("magic", [0, 2])
@given(data=st.binary(max_size=300))
def test_garbage_raises_decode_error_only(codec, magic, data):
    try:
        decompress(codec, data, magic=magic, limit=1 << 16)
    except DecodeError:
        pass


@pytest.mark.parametrize("codec", [c for c in CODECS if c != Codec.NONE])
def test_truncation_is_detected(codec):
    data = compress(codec, os.urandom(50_000))
    with pytest.raises(DecodeError):
        decompress(codec, data[: len(data) - 7])


@pytest.mark.parametrize("codec", [c for c in CODECS if c != Codec.NONE])
@pytest.mark.parametrize("magic", [0, 2])
@given(data=st.data())
def test_damaged_payloads_raise_decode_error_only(codec, magic, data):
    packed = bytearray(compress(codec, data.draw(st.binary(min_size=1, max_size=2000)), magic=magic))
    position = data.draw(st.integers(0, len(packed) - 1))
    packed[position] ^= data.draw(st.integers(1, 255))
    try:
        decompress(codec, bytes(packed), magic=magic, limit=1 << 16)
    except DecodeError:
        pass
