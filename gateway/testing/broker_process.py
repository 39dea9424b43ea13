"""The gateway with its embedded mesh as a child process, on free ports, until stopped."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from gateway.testing.ports import free_port

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)  # size, api key, version, correlation id, no client id


class BrokerProcess:
    """`python -m gateway` on `data_dir` (made if missing), listening on `host` (127.0.0.1 by
    default) only, started under `prefix` if given (`ip netns exec NS`, say); restartable on the
    same data. Its log goes to `log_path` (beside the data by default)."""

    mesh_options: tuple[str, ...] = ()  # before `options`, which may override them

    def __init__(self, data_dir: Path, *options: str, stores: int = 1, log_path: Path | None = None,
                 host: str = "127.0.0.1", prefix: Sequence[str] = ()):
        self.data_dir = data_dir
        self.prefix = list(prefix)
        self.host = self.tower_host = host
        self.port = free_port()
        self.tower_sub, self.tower_pub = free_port(), free_port()
        self.options = options
        self.stores = stores
        self.process: subprocess.Popen | None = None
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        tower_sub, tower_pub = (f"tcp://{self.tower_host}:{port}" for port in (self.tower_sub, self.tower_pub))
        return [
            *self.prefix, sys.executable, "-m", "gateway",
            "--host-name", self.host, "--mesh-bind-host", self.host, "--port", str(self.port),
            "--log-dirs", str(self.data_dir),
            "--embedded-stores", str(self.stores),
            "--tower-sub-address", tower_sub, "--tower-pub-address", tower_pub,
            "--beacon-sub-address", tower_sub, "--beacon-pub-address", tower_pub,
            *self.mesh_options, *self.options,
        ]

    def start(self) -> BrokerProcess:
        """Start it and return once it answers Kafka requests (RuntimeError with its log if not)."""
        self.spawn()
        self.wait_serving()
        return self

    def spawn(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def wait_serving(self) -> None:
        """Until the gateway answers ApiVersions: it binds its port before it serves."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.process.returncode}:\n{self.log_tail()}")
            if answers_api_versions(self.host, self.port, timeout=min(1.0, deadline - time.monotonic())):
                return
            time.sleep(0.01)
        raise RuntimeError(f"gateway did not serve within {START_TIMEOUT_S}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the gateway, then wait for its stores to stop (they follow it)."""
        stores = children(self.process.pid)
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        deadline = time.monotonic() + START_TIMEOUT_S
        while any(alive(pid) for pid in stores) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, as a user's Ctrl-C would, SIGKILL if it does not end in time; the exit code."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


def answers_api_versions(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.sendall(API_VERSIONS_V0)
            return len(connection.recv(8)) >= 8
    except OSError:
        return False


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended since the listing (a worker thread's short life)
            continue
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
