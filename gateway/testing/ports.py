"""Free local ports for servers that a test starts and that bind them later.

They come from below the kernel's ephemeral range, so that no socket's automatic
port takes one in between, and from a slice of their own per pytest-xdist
worker, so that two workers never hand out the same one.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from pathlib import Path

PORT_SLICE = 2000
FIRST_PORT = 10000
WORKERS_WITH_SLICES = 8


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _worker_ports():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    start = FIRST_PORT + int(worker or 0) % WORKERS_WITH_SLICES * PORT_SLICE
    offset = random.randrange(PORT_SLICE)  # successive runs do not start on the same ports
    return (start + (offset + n) % PORT_SLICE for n in itertools.count())


_ports = _worker_ports() if FIRST_PORT + WORKERS_WITH_SLICES * PORT_SLICE <= _ephemeral_low() else None


def free_port() -> int:
    """A port nothing listens on now, that a server of the test may bind."""
    for port in _ports or [0]:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise RuntimeError("no free port")
