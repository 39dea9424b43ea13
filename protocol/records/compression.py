"""Kafka's compression codecs, bounded on the way in.

The codecs come from libraries (zlib, python-snappy, lz4, zstandard); this
module only adds the Kafka framing around them:

* snappy: the Java client writes snappy-java's "xerial" stream (a magic
  header, then blocks of [int32 length][raw snappy block]); librdkafka and
  others may send one raw block. Both are read; xerial is written.
* lz4: the standard frame with independent blocks (the Java reader rejects
  linked blocks). Before KAFKA-3160 clients hashed the frame's magic number
  into the header checksum byte; Kafka still reads and writes that broken
  checksum for magic 0 messages, and so do we.

Every decompression takes a `limit` on the output size so that a small
compressed payload cannot blow up into gigabytes (a decompression bomb).
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import lz4.frame
import snappy
import zstandard

from protocol.errors import DecodeError

DEFAULT_LIMIT = 64 * 1024 * 1024


class Codec(IntEnum):
    """The compression codec ids carried in batch and message attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# Kafka's levels (compression.gzip.level, .lz4.level, .zstd.level): the
# ranges and defaults of the Java client; gzip's -1 is zlib's default.
LEVELS = {Codec.GZIP: (1, 9, -1), Codec.LZ4: (1, 17, 9), Codec.ZSTD: (-131072, 22, 3)}


def compress(codec: Codec, data: bytes, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress `data` the way the Java client does for `codec` and `magic`,
    at `level` (None: the codec's default level; snappy has none)."""
    if level is None and codec in LEVELS:
        level = LEVELS[codec][2]
    if codec == Codec.GZIP:
        packer = zlib.compressobj(level, wbits=31)
        return packer.compress(data) + packer.flush()
    if codec == Codec.SNAPPY:
        return _xerial_compress(data)
    if codec == Codec.LZ4:
        return _lz4_compress(data, level, broken_checksum=magic == 0)
    if codec == Codec.ZSTD:
        return _zstd_compressor(level).compress(data)
    return bytes(data)


def decompress(
    codec: Codec, data: bytes, *, magic: int = 2, limit: int = DEFAULT_LIMIT
) -> bytes:
    """Decompress `data`; DecodeError if it is corrupt or inflates beyond `limit`."""
    try:
        if codec == Codec.GZIP:
            return _gzip_decompress(data, limit)
        if codec == Codec.SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == Codec.LZ4:
            return _lz4_decompress(data, limit, ignore_checksum=magic == 0)
        if codec == Codec.ZSTD:
            return _zstd_decompress(data, limit)
    except (zlib.error, snappy.UncompressError, RuntimeError, zstandard.ZstdError) as error:
        raise DecodeError(f"corrupt {codec.name.lower()} data: {error}") from None
    if len(data) > limit:
        raise DecodeError(f"uncompressed records exceed {limit} bytes")
    return bytes(data)


def _too_big(codec: str, limit: int) -> DecodeError:
    return DecodeError(f"{codec} data inflates beyond {limit} bytes")


# gzip -------------------------------------------------------------------


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    # Java's GZIPInputStream reads concatenated members, so we do too.
    parts = []
    produced = 0
    rest = data
    while True:
        inflater = zlib.decompressobj(wbits=31)
        part = inflater.decompress(rest, limit - produced + 1)
        produced += len(part)
        if produced > limit:
            raise _too_big("gzip", limit)
        if not inflater.eof:
            raise DecodeError("truncated gzip data")
        parts.append(part)
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)


# snappy -----------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_INT32 = struct.Struct(">i")


def _xerial_compress(data: bytes) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = snappy.compress(view[start : start + _XERIAL_BLOCK])
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    view = memoryview(data)
    if view[:8] != XERIAL_MAGIC:
        return _snappy_block(view, limit)
    if len(view) < len(_XERIAL_HEADER):
        raise DecodeError("truncated xerial snappy header")
    parts = []
    produced = 0
    pos = len(_XERIAL_HEADER)
    while pos < len(view):
        if pos + 4 > len(view):
            raise DecodeError("truncated xerial snappy block length", pos)
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or pos + size > len(view):
            raise DecodeError("xerial snappy block overruns the data", pos - 4)
        part = _snappy_block(view[pos : pos + size], limit - produced)
        produced += len(part)
        parts.append(part)
        pos += size
    return b"".join(parts)


def _snappy_block(block: memoryview, limit: int) -> bytes:
    # A raw block starts with its uncompressed length (unsigned LEB128):
    # check it before the library allocates that much.
    length = shift = 0
    for pos in range(min(len(block), 5)):
        byte = block[pos]
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    else:
        raise DecodeError("bad snappy block length")
    if length > limit:
        raise _too_big("snappy", limit)
    return snappy.decompress(block)


# lz4 --------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_CONTENT_SIZE_FLAG = 0x08
_LZ4_DICT_ID_FLAG = 0x01


def _lz4_compress(data: bytes, level: int, *, broken_checksum: bool) -> bytes:
    frame = lz4.frame.compress(
        data,
        compression_level=level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if not broken_checksum:
        return frame
    # Our frames have a two byte descriptor, so the checksum byte is at 6.
    return frame[:6] + bytes([_lz4_header_checksum(frame[:6])]) + frame[7:]


def _lz4_decompress(data: bytes, limit: int, *, ignore_checksum: bool) -> bytes:
    if ignore_checksum:
        data = _with_valid_header_checksum(data)
    inflater = lz4.frame.LZ4FrameDecompressor()
    out = inflater.decompress(data, max_length=limit + 1)
    if len(out) > limit:
        raise _too_big("lz4", limit)
    if not inflater.eof:
        raise DecodeError("truncated lz4 frame")
    return out


def _with_valid_header_checksum(data: bytes) -> bytes:
    """Replace the frame's header checksum byte by the correct one.

    Kafka ignores that byte for magic 0 because old clients computed it over
    the magic number as well; the lz4 library always checks it.
    """
    if len(data) < 7 or data[:4] != _LZ4_MAGIC:
        return data  # the library reports the damage
    flags = data[4]
    end = 6 + (8 if flags & _LZ4_CONTENT_SIZE_FLAG else 0) + (4 if flags & _LZ4_DICT_ID_FLAG else 0)
    if len(data) <= end:
        return data
    checksum = _lz4_header_checksum(data[4:end])
    return bytes(data[:end]) + bytes([checksum]) + bytes(data[end + 1 :])


def _lz4_header_checksum(descriptor: bytes) -> int:
    """Second byte of the xxHash32 of `descriptor`, as the lz4 frame wants it.

    The lz4 library exposes no hash, but a frame's content checksum is the
    xxHash32 (seed 0) of its content: compress the descriptor and read it.
    """
    frame = lz4.frame.compress(bytes(descriptor), content_checksum=True, store_size=False)
    digest = int.from_bytes(frame[-4:], "little")
    return (digest >> 8) & 0xFF


# zstd -------------------------------------------------------------------

_ZSTD_COMPRESSORS: dict[int, zstandard.ZstdCompressor] = {}


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    compressor = _ZSTD_COMPRESSORS.get(level)
    if compressor is None:  # one per level in use: a topic's level, seldom more than a few
        compressor = _ZSTD_COMPRESSORS[level] = zstandard.ZstdCompressor(level=level)
    return compressor
_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    size = zstandard.frame_content_size(data)
    if size > limit:
        raise _too_big("zstd", limit)
    # Without a size in the frame header the library needs a bound; with
    # one, it allocates exactly that size.
    bound = limit if size < 0 else 0
    return _ZSTD_DECOMPRESSOR.decompress(data, max_output_size=bound, allow_extra_data=False)
