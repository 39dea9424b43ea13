"""Socket.send_soon: a PUB's messages go out when the trio loop's pass ends, together, in
order, ahead of any later send on the socket, at once when SOON_MAX messages or
SOON_MAX_BYTES are queued, and still when the socket closes first."""

import pytest
import trio
import zmq

from gateway.zmq_trio import POLLIN, SOON_MAX, SOON_MAX_BYTES, Socket, zmq_context

ADDRESS = "inproc://queued-sends"  # no I/O thread between: a sent message is receivable at once


async def _pair(context: zmq.Context) -> tuple[Socket, Socket]:
    """A PUB and a SUB of everything it publishes, once the subscription reached the PUB."""
    publisher, subscriber = Socket(context, zmq.PUB, linger_ms=1000), Socket(context, zmq.SUB, linger_ms=0)
    publisher.zsock.bind(ADDRESS)
    subscriber.connect(ADDRESS)
    subscriber.subscribe(b"")
    while True:
        await publisher.send([b"probe"])
        with trio.move_on_after(0.05):
            await subscriber.recv()
            break
    while subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN:  # probes sent while the first was on its way
        await subscriber.recv()
    return publisher, subscriber


async def _received(subscriber: Socket, count: int) -> list[bytes]:
    return [bytes(frames[0]) for _ in range(count) for frames in [await subscriber.recv()]]


async def test_queued_messages_go_out_together_when_the_pass_ends():
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            publisher.send_soon([[b"a"], [b"b"]])
            publisher.send_soon([[b"c"]])
            assert not subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN  # nothing sent before the task yields
            await trio.lowlevel.checkpoint()
            assert await _received(subscriber, 3) == [b"a", b"b", b"c"]


async def test_a_full_queue_goes_out_at_once():
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            publisher.send_soon([[b"%d" % n] for n in range(SOON_MAX - 1)])
            assert not subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN
            publisher.send_soon([[b"last"]])
            assert subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN  # before the task yields
            assert await _received(subscriber, SOON_MAX) == [b"%d" % n for n in range(SOON_MAX - 1)] + [b"last"]


async def test_large_messages_go_out_at_once():
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            publisher.send_soon([[b"small"], [bytes(SOON_MAX_BYTES // 2)]])
            assert not subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN
            publisher.send_soon([[b"head", bytes(SOON_MAX_BYTES // 2)]])
            assert subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN  # before the task yields
            assert await _received(subscriber, 3) == [b"small", bytes(SOON_MAX_BYTES // 2), b"head"]


async def test_queued_messages_go_ahead_of_a_later_send():
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with publisher, subscriber:
            publisher.send_soon([[b"record"]])
            assert publisher.send_nowait([[b"head"]]) == 1
            await publisher.send_batch([[b"answer"]])
            assert await _received(subscriber, 3) == [b"record", b"head", b"answer"]


async def test_a_closing_socket_sends_what_it_queued():
    with zmq_context() as context:
        publisher, subscriber = await _pair(context)
        with subscriber:
            publisher.send_soon([[b"last"]])
            publisher.close()
            assert await _received(subscriber, 1) == [b"last"]
            await trio.lowlevel.checkpoint()  # the pass ends with the socket closed: nothing to send, no error


async def test_only_a_socket_that_drops_at_its_high_water_mark_queues():
    with zmq_context() as context, Socket(context, zmq.DEALER, linger_ms=0) as dealer, \
            Socket(context, zmq.XPUB, linger_ms=0) as xpub:
        with pytest.raises(TypeError):
            dealer.send_soon([[b"x"]])
        xpub.send_soon([[b"x"]])
        xpub.never_drop()
        with pytest.raises(TypeError):
            xpub.send_soon([[b"x"]])


async def test_a_message_ready_when_its_connection_is_cut_is_received_whole():
    """A SUB asked for its events takes the first frame of the next message; cutting the
    connection it came from must not leave the rest behind (libzmq would abort on it)."""
    with zmq_context() as context:
        publisher, subscriber = Socket(context, zmq.PUB, linger_ms=1000), Socket(context, zmq.SUB, linger_ms=0)
        with publisher, subscriber:
            port = publisher.zsock.bind_to_random_port("tcp://127.0.0.1")
            endpoint = f"tcp://127.0.0.1:{port}"
            subscriber.connect(endpoint)
            subscriber.subscribe(b"")
            while not subscriber.zsock.getsockopt(zmq.EVENTS) & POLLIN:  # the first frame taken
                await publisher.send([b"first", b"second", b"third"])
                await trio.sleep(0.01)
            subscriber.disconnect(endpoint)
            with trio.fail_after(5):
                message = await subscriber.recv()
            assert [bytes(frame) for frame in message] == [b"first", b"second", b"third"]
