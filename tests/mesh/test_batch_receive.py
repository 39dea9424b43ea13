"""Socket.recv_batch(copies=True): whole messages in order, at most the limit asked, frames
intact as bytes (or, from COPIED_BELOW on, as buffers of ZeroMQ's that outlive the socket),
through the compiled receive (gateway/_zmq_receive.c) and through pyzmq where it is missing."""

import random

import pytest
import trio
import zmq

from gateway import zmq_trio
from gateway.zmq_trio import COPIED_BELOW, Socket, zmq_context

ADDRESS = "inproc://batch-receive"
MESSAGES = [[b"M topic\x00\x01", b"x" * 100], [b"one"], [b"a", b"", b"c"], [b"big", bytes(range(256)) * 1024],
            [b"edge", b"y" * COPIED_BELOW], [b"under", b"z" * (COPIED_BELOW - 1)]]


@pytest.fixture(params=["compiled", "pyzmq"])
def receive_path(request, monkeypatch):
    if request.param == "compiled" and zmq_trio.RECEIVE_COPIES is None:
        pytest.skip("gateway._zmq_receive not built (no C compiler)")
    if request.param == "pyzmq":
        monkeypatch.setattr(zmq_trio, "RECEIVE_COPIES", None)
    return request.param


async def _pair(context: zmq.Context) -> tuple[Socket, Socket]:
    """A PUB and a SUB of everything, once the subscription reached the PUB (inproc: at once)."""
    publisher, subscriber = Socket(context, zmq.PUB, linger_ms=0), Socket(context, zmq.SUB, linger_ms=0)
    publisher.zsock.bind(ADDRESS)
    subscriber.connect(ADDRESS)
    subscriber.subscribe(b"")
    return publisher, subscriber


def _as_bytes(batch: list[list]) -> list[list[bytes]]:
    return [[bytes(frame) for frame in frames] for frames in batch]


async def test_whole_messages_come_in_order_within_the_limit(receive_path):
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            await publisher.send_batch(MESSAGES)
            first = await subscriber.recv_batch(4, copies=True)
            rest = await subscriber.recv_batch(100, copies=True)
    assert _as_bytes(first + rest) == MESSAGES
    assert len(first) == 4
    lengths = [len(frame) for frames in first + rest for frame in frames]
    assert lengths == [len(frame) for frames in MESSAGES for frame in frames]
    if receive_path == "compiled":
        assert all(type(frame) is bytes for frames in first + rest for frame in frames if len(frame) < COPIED_BELOW)


async def test_a_large_frame_outlives_its_socket_and_context(receive_path):
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            await publisher.send([b"big", bytes(range(256)) * 1024])
            [[_, content]] = await subscriber.recv_batch(10, copies=True)
    assert bytes(memoryview(content)[:256]) == bytes(range(256)) and len(content) == 256 * 1024


async def test_a_receive_waits_for_a_message(receive_path):
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            async with trio.open_nursery() as nursery:
                received = []

                async def receive():
                    received.extend(await subscriber.recv_batch(10, copies=True))

                nursery.start_soon(receive)
                await trio.sleep(0.05)
                assert not received
                await publisher.send([b"late"])
    assert _as_bytes(received) == [[b"late"]]


async def test_a_message_held_by_a_disconnect_comes_first(receive_path):
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            await publisher.send_batch([[b"held", b"1"], [b"next"]])
            subscriber.disconnect(ADDRESS)  # the first message is received and held
            batch = await subscriber.recv_batch(10, copies=True)
    assert _as_bytes(batch)[0] == [b"held", b"1"]


async def test_a_closed_socket_raises_as_pyzmq_does(receive_path):
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher:
            subscriber.close()
            with pytest.raises(zmq.ZMQError):
                await subscriber.recv_batch(10, copies=True)


async def test_many_messages_of_every_shape_come_whole_and_in_order(receive_path):
    """Frame counts and sizes either side of COPIED_BELOW, received with limits of 1 to 64."""
    shapes = random.Random(14)
    sent = [[shapes.randbytes(shapes.choice((0, 1, 100, COPIED_BELOW - 1, COPIED_BELOW, 200_000)))
             for _ in range(shapes.randint(1, 4))] for _ in range(300)]  # under the high-water mark: none dropped
    received = []
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            await publisher.send_batch(sent)
            while len(received) < len(sent):
                batch = await subscriber.recv_batch(shapes.randint(1, 64), copies=True)
                assert batch
                received += batch
    assert _as_bytes(received) == sent
