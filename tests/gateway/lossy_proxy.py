"""A TCP proxy between Kafka clients and a gateway that loses produce responses.

Every n-th Produce response is not forwarded: the proxy closes that client
connection instead, after the gateway appended the batches, as a response
lost on the network would. Clients retry; an idempotent producer's retries
must be answered as duplicates. The gateway advertises the proxy's port, so
every connection a client opens goes through it.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading

PRODUCE = 0
SIZE = struct.Struct(">i")
REQUEST_HEAD = struct.Struct(">hhi")  # api key, version, correlation id
CORRELATION_ID = struct.Struct(">i")


class LossyProxy:
    def __init__(self, port: int, target_port: int, drop_every: int):
        self.target_port = target_port
        self.drop_every = drop_every
        self.dropped = 0
        self._produce_answers = itertools.count(1)
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            produce_requests: set[int] = set()
            threading.Thread(target=self._requests, args=(client, server, produce_requests), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, produce_requests), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, produce_requests: set[int]) -> None:
        for frame in _frames(client):
            api_key, _, correlation_id = REQUEST_HEAD.unpack_from(frame, SIZE.size)
            if api_key == PRODUCE:
                produce_requests.add(correlation_id)
            if not _send(server, frame):
                break
        _close(client, server)

    def _responses(self, server: socket.socket, client: socket.socket, produce_requests: set[int]) -> None:
        for frame in _frames(server):
            (correlation_id,) = CORRELATION_ID.unpack_from(frame, SIZE.size)
            if correlation_id in produce_requests and self._drops_this_one():
                break
            if not _send(client, frame):
                break
        _close(client, server)

    def _drops_this_one(self) -> bool:
        with self._lock:
            if next(self._produce_answers) % self.drop_every:
                return False
            self.dropped += 1
            return True


def _frames(sock: socket.socket):
    """Whole size-prefixed frames, prefix included, until the peer or we close."""
    try:
        while True:
            head = _exactly(sock, SIZE.size)
            (size,) = SIZE.unpack(head)
            yield head + _exactly(sock, size)
    except OSError:
        return


def _exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionResetError("closed")
        data += chunk
    return bytes(data)


def _send(sock: socket.socket, frame: bytes) -> bool:
    try:
        sock.sendall(frame)
        return True
    except OSError:
        return False


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
