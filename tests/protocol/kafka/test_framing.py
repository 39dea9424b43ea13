"""FrameReader: any chunking of a stream gives back its frames, unchanged later, and no
buffer is ever much larger than the bytes received, whatever size the prefixes claim."""

import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from protocol.errors import DecodeError
from protocol.kafka.framing import GROWTH_BYTES, FrameReader

# Large frames are slices of a pattern that never repeats in step with a buffer: random
# kilobytes would exhaust hypothesis's data budget, yet a shifted byte must still show.
PATTERN = bytes(i % 251 for i in range(21_000))
large_frame = st.builds(lambda size, start: PATTERN[start : start + size], st.integers(5000, 20_000),
                        st.integers(0, 1000))
frames_strategy = st.lists(st.binary(max_size=300) | large_frame, max_size=12)


def framed(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(frame)) + frame for frame in frames)


def drain(reader: FrameReader, out: list) -> None:
    while (frame := reader.next_frame()) is not None:
        out.append(frame)


def allocation_bound(reader: FrameReader, received: int) -> int:
    """The most a reader may hold once `received` bytes came: as much again, or GROWTH_BYTES
    more, or one ordinary buffer."""
    return max(2 * received, received + GROWTH_BYTES, reader.buffer_bytes)


def receive(reader: FrameReader, data: bytes, received: int, views: list) -> int:
    """As a socket's recv_into: bytes of `data` written into the reader's free space. The view
    of that space is kept in `views` if given (the buffer cannot grow in place while it lives)."""
    space = reader.buffer_to_fill()
    assert len(space.obj) <= allocation_bound(reader, received)
    count = min(len(space), len(data))
    space[:count] = data[:count]
    reader.filled(count)
    if views is not None:
        views[:] = [space]
    return count


@given(frames_strategy, st.lists(st.integers(1, 10_000), min_size=1), st.sampled_from(["feed", "fill", "hold"]))
def test_any_chunking_gives_the_frames_back(frames, cuts, how):
    stream = framed(frames)
    reader = FrameReader(1 << 20, buffer_bytes=4096)
    out: list[memoryview] = []
    position, turn = 0, 0
    views = [] if how == "hold" else None
    while position < len(stream):
        if how != "feed":
            count = receive(reader, stream[position : position + cuts[turn % len(cuts)]], position, views)
        else:
            count = cuts[turn % len(cuts)]
            reader.feed(stream[position : position + count])
        position += count
        turn += 1
        drain(reader, out)
    assert [bytes(frame) for frame in out] == frames  # frames handed out early were never overwritten
    assert reader.pending_bytes == 0


@pytest.mark.parametrize("size", [-1, 1001])
def test_a_size_outside_the_limit_is_refused_before_the_body(size):
    reader = FrameReader(1000)
    reader.feed(struct.pack(">i", size))
    with pytest.raises(DecodeError):
        reader.next_frame()


@given(st.integers(1 << 20, 100 << 20), st.lists(st.integers(1, 300_000), min_size=1, max_size=40))
@example(1 << 20, [1, 46604, 65536, 112145, 224290, 300000, 300000])  # the receives add up to the frame
def test_a_claimed_size_costs_nothing_until_its_bytes_come(claimed, receives):
    """Whatever a prefix announces, a reader holds at most about twice the bytes received, while
    the frame's last byte has not come."""
    reader = FrameReader(100 << 20)
    reader.feed(struct.pack(">i", claimed))
    received = 4
    for count in receives:
        received += receive(reader, bytes(min(count, claimed + 3 - received)), received, None)
    assert reader.pending_bytes == received and reader.next_frame() is None


@pytest.mark.parametrize("hold_view", [False, True])
def test_a_large_frame_grows_its_buffer_as_its_bytes_come(hold_view):
    """Room as much again as has come; in place, unless a view of the buffer is still alive."""
    reader = FrameReader(1 << 22, buffer_bytes=1024)
    size = 1 << 21
    reader.feed(struct.pack(">i", size) + b"a")
    offered, buffers = [], []
    while (frame := reader.next_frame()) is None:
        space = reader.buffer_to_fill()  # a view held from the round before blocks a resize
        offered.append(len(space))
        buffers.append(space.obj)
        space[:] = b"b" * len(space)
        reader.filled(len(space))
        if not hold_view:
            del space
    assert offered[0] == GROWTH_BYTES and offered[-1] > offered[0]  # doubled as bytes came
    assert sum(offered) == size - 1  # never room beyond the frame's end
    assert len({id(buffer) for buffer in buffers}) == (len(buffers) if hold_view else 1)
    assert len(frame) == size and frame[0] == ord("a") and frame[-1] == ord("b")
    assert bytes(frame[1:]) == b"b" * (size - 1)


def test_a_quiet_stream_holds_no_buffer_and_a_busy_one_grows_its_buffers():
    reader = FrameReader(1 << 20, buffer_bytes=256 * 1024)
    assert not reader.holds_buffer  # nothing taken before bytes come
    first = reader.buffer_to_fill()
    assert len(first) == 16 * 1024
    request = framed([b"x" * 10])
    first[: len(request)] = request
    reader.filled(len(request))
    frame = reader.next_frame()
    reader.release()
    assert not reader.holds_buffer and bytes(frame) == b"x" * 10  # the frame keeps its bytes
    sizes = []
    for _ in range(4):  # receives that fill every byte offered: the next buffers are larger
        space = reader.buffer_to_fill()
        sizes.append(len(space))
        space[:] = framed([b"y" * (len(space) - 4)])
        reader.filled(len(space))
        reader.next_frame()
    assert sizes == [16 * 1024, 64 * 1024, 256 * 1024, 256 * 1024]


def test_a_stream_with_bytes_pending_keeps_its_buffer():
    reader = FrameReader(1 << 20)
    partial = framed([b"z" * 100])[:50]
    reader.feed(partial)
    reader.release()
    assert reader.holds_buffer and reader.pending_bytes == 50
    reader.feed(framed([b"z" * 100])[50:])
    assert bytes(reader.next_frame()) == b"z" * 100
