"""ZeroMQ CURVE between the project's own mesh nodes: encrypted, and only known keys admitted.

The mesh shares one key pair (a ZeroMQ certificate, `mesh.curve.secret.key.file`):
every node serves its bound sockets with it and connects with it, naming its
public key as the server's, so that a node needs no other node's key. A
ZAP handler in each process (zmq.auth's, one per context) admits a peer only
if its public key is among the certificates of `mesh.curve.public.keys.dir`.
An unknown peer then fails the handshake with every socket of the mesh: it
can neither publish into it nor read from it. Without the settings, sockets
stay plaintext, as the C reference nodes speak.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from gateway.settings.table import MeshSettings


class CurveKeyError(ValueError):
    """The mesh's key files cannot be used; the message says which and why."""


@dataclass(frozen=True)
class CurveKeys:
    public: bytes
    secret: bytes
    authorized: Path  # the directory of the public certificates admitted

    @classmethod
    def of(cls, mesh: MeshSettings) -> CurveKeys | None:
        """The mesh's keys, None for a plaintext mesh; CurveKeyError if they cannot be read."""
        if mesh.mesh_curve_secret_key_file is None:
            return None
        path, authorized = mesh.mesh_curve_secret_key_file, mesh.mesh_curve_public_keys_dir
        try:
            public, secret = zmq.auth.load_certificate(path)
        except (OSError, ValueError) as exc:
            raise CurveKeyError(f"cannot read mesh.curve.secret.key.file {path}: {exc}") from None
        if secret is None:
            raise CurveKeyError(f"mesh.curve.secret.key.file {path} holds no secret key (a public certificate?)")
        if authorized is None or not authorized.is_dir():
            raise CurveKeyError(f"mesh.curve.public.keys.dir {authorized} is not a directory")
        return cls(public, secret, authorized)

    def serve(self, socket: zmq.Socket) -> None:
        """Make a socket that binds a CURVE server, before it binds."""
        socket.curve_secretkey, socket.curve_publickey, socket.curve_server = self.secret, self.public, True

    def connect(self, socket: zmq.Socket) -> None:
        """Make a socket that connects a CURVE client of the mesh's servers, before it connects."""
        socket.curve_secretkey, socket.curve_publickey, socket.curve_serverkey = self.secret, self.public, self.public


def serve(socket: zmq.Socket, keys: CurveKeys | None) -> None:
    if keys is not None:
        keys.serve(socket)


def connect(socket: zmq.Socket, keys: CurveKeys | None) -> None:
    if keys is not None:
        keys.connect(socket)


@contextmanager
def curve_authenticator(context: zmq.Context, keys: CurveKeys | None) -> Iterator[None]:
    """The context's ZAP handler while inside, admitting the authorized keys; nothing for a plaintext mesh.

    It must run before any CURVE socket binds: without a handler, libzmq admits every client."""
    if keys is None:
        yield
        return
    authenticator = ThreadAuthenticator(context, log=logging.getLogger("gateway.zmq_curve"))
    authenticator.start()
    try:
        authenticator.configure_curve(domain="*", location=str(keys.authorized))
        yield
    finally:
        authenticator.stop()
