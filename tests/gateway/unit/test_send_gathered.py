"""send_gathered: short writes resume where they stopped, buffers stay in order."""

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.server.connection import send_gathered


class ShortWritingSocket:
    """Takes at most `limit` bytes per sendmsg, as a full socket buffer would."""

    def __init__(self, limit: int):
        self.limit = limit
        self.received = bytearray()
        self.calls = 0

    async def sendmsg(self, buffers):
        self.calls += 1
        taken = b"".join(bytes(b) for b in buffers)[: self.limit]
        self.received += taken
        return len(taken)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 500))
def test_every_byte_goes_out_once_in_order(pieces, limit):
    socket = ShortWritingSocket(limit)
    trio.run(send_gathered, socket, pieces)
    assert bytes(socket.received) == b"".join(pieces)
