"""GatheredSend: writes the socket cuts short resume where they stopped, buffers stay in order."""

import socket

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.server.connection import GatheredSend


async def _send_and_receive(pieces: list[bytes], chunk: int) -> bytes:
    """Send `pieces` through a socket pair with small buffers, read `chunk` bytes at a time."""
    sender, receiver = trio.socket.socketpair()
    with sender, receiver:
        for side, option in ((sender, socket.SO_SNDBUF), (receiver, socket.SO_RCVBUF)):
            side.setsockopt(socket.SOL_SOCKET, option, 4096)
        received = bytearray()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(GatheredSend(pieces).send_all, sender)
            while len(received) < sum(map(len, pieces)):
                received += await receiver.recv(chunk)
        return bytes(received)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=20_000), max_size=20), st.integers(1, 5000))
def test_every_byte_goes_out_once_in_order(pieces, chunk):
    assert trio.run(_send_and_receive, pieces, chunk) == b"".join(pieces)


def test_a_full_socket_is_not_waited_for_by_send_now():
    sender, receiver = socket.socketpair()
    with sender, receiver:
        sender.setblocking(False)
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        assert not GatheredSend([b"x" * 4_000_000]).send_now(sender.fileno())
        assert GatheredSend([b"", b"y"]).send_now(receiver.fileno())
