"""Hosts of their own for a test's processes (issue 16): each host a Linux network namespace
with its own address on a private bridge, so that a test can cut one off the network and heal it.

The bridge lives in a namespace of its own, where no firewall rule of the machine's sees the
frames it forwards (Docker's FORWARD policy is DROP, and bridged frames pass it). A host is cut
off by setting its port on the bridge down: its own interface and addresses stay, so its
processes and their peers see silence, as behind a failed switch, not errors; a client in the
host's namespace still reaches its processes. The test process reaches every host from the
root namespace through one more port of the bridge.

Every name holds a random run id, and the subnet is one the machine does not route yet, so tests
running at once never share a namespace, an interface or addresses; leaving `private_network`
deletes what it made, also when the test failed.
"""

from __future__ import annotations

import ctypes
import os
import random
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from ipaddress import ip_network

CLONE_NEWNET = 0x40000000
ROUTE_TYPES = {"unicast", "local", "broadcast", "multicast", "anycast", "blackhole", "unreachable", "prohibit",
               "throw", "nat"}
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Host:
    """Where a process runs: the address it binds and is reached on, and its network namespace
    (None: the test's own)."""

    address: str = "127.0.0.1"
    namespace: str | None = None

    @property
    def prefix(self) -> tuple[str, ...]:
        """What a command is started under to run here."""
        return ("ip", "netns", "exec", self.namespace) if self.namespace else ()

    def connect(self, port: int, timeout: float) -> socket.socket:
        """A TCP connection to `port` here, made from inside the host's namespace: a client on the
        host's side of a partition."""
        if self.namespace is None:
            return socket.create_connection((self.address, port), timeout=timeout)
        with open(f"/run/netns/{self.namespace}") as there, open("/proc/thread-self/ns/net") as home:
            _enter(there)
            try:  # a socket stays in the namespace it was made in
                return socket.create_connection((self.address, port), timeout=timeout)
            finally:
                _enter(home)


LOOPBACK = Host()


def on_loopback(name: str) -> Host:
    """Every process on this machine's loopback, as the tests that need no partition run."""
    return LOOPBACK


def _enter(namespace_file) -> None:
    """Move this thread (only) into the network namespace of `namespace_file`."""
    if _libc.setns(namespace_file.fileno(), CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _ip(*arguments: str) -> None:
    subprocess.run(["ip", *arguments], check=True, capture_output=True, text=True)


class Network:
    """Hosts made on first use, each on a port of the bridge."""

    def __init__(self, run: str, subnet: str):
        self.run = run
        self.subnet = subnet  # the first three bytes of the /24
        self.switch = f"dafka-{run}-switch"
        self.root_link = f"dafka{run}"  # in the root namespace: names there are 15 characters at most
        self.hosts: dict[str, Host] = {}
        self.ports: dict[Host, str] = {}  # host -> its port on the bridge

    def open(self) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "bridge", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "dev", "bridge", "up")
        _ip("link", "add", self.root_link, "type", "veth", "peer", "name", "root", "netns", self.switch)
        _ip("-n", self.switch, "link", "set", "dev", "root", "master", "bridge", "up")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.root_link)
        _ip("link", "set", "dev", self.root_link, "up")

    def host(self, name: str) -> Host:
        """The host called `name`, made with the next address if new."""
        if name not in self.hosts:
            number = len(self.hosts) + 2
            host = Host(f"{self.subnet}.{number}", f"dafka-{self.run}-{name}")
            port = f"host{number}"
            _ip("netns", "add", host.namespace)
            self.hosts[name] = host  # deleted from now on, whatever fails next
            self.ports[host] = port
            _ip("link", "add", "eth0", "netns", host.namespace, "type", "veth", "peer", "name", port,
                "netns", self.switch)
            _ip("-n", self.switch, "link", "set", "dev", port, "master", "bridge", "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "dev", "eth0", "up")
            _ip("-n", host.namespace, "link", "set", "dev", "lo", "up")
        return self.hosts[name]

    def cut(self, host: Host) -> None:
        """Nothing goes to or comes from `host` any more; its connections stay open."""
        _ip("-n", self.switch, "link", "set", "dev", self.ports[host], "down")

    def heal(self, host: Host) -> None:
        _ip("-n", self.switch, "link", "set", "dev", self.ports[host], "up")

    def close(self) -> None:
        """Delete the namespaces, which ends their interfaces; their processes must have ended."""
        subprocess.run(["ip", "link", "del", self.root_link], capture_output=True)
        for namespace in [self.switch, *(host.namespace for host in self.hosts.values())]:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


@contextmanager
def private_network() -> Iterator[Network]:
    network = Network(secrets.token_hex(3), _unrouted_subnet())
    try:
        network.open()
        yield network
    finally:
        network.close()


def _unrouted_subnet() -> str:
    """A 10.x.y.0/24 no route of this machine's covers but its default ones."""
    table = subprocess.run(["ip", "-4", "-o", "route", "show", "table", "all"], check=True, capture_output=True,
                           text=True).stdout
    routed = [ip_network(destination, strict=False) for destination in map(_destination, table.splitlines())
              if destination != "default"]
    while True:
        subnet = ip_network(f"10.{random.randrange(64, 255)}.{random.randrange(256)}.0/24")
        if not any(subnet.overlaps(known) for known in routed):
            return str(subnet.network_address).rsplit(".", 1)[0]


def _destination(route: str) -> str:
    words = route.split()
    return words[1] if words[0] in ROUTE_TYPES else words[0]


def unsupported() -> str | None:
    """Why this machine cannot give a test's processes hosts of their own, None if it can."""
    if os.geteuid() != 0:
        return "hosts of their own are network namespaces, which only root may make"
    if shutil.which("ip") is None:
        return "no ip command (iproute2) to make network namespaces with"
    probe = f"dafka-probe-{secrets.token_hex(3)}"
    try:
        for step in (["netns", "add", probe], ["netns", "exec", probe, "true"],
                     ["-n", probe, "link", "add", "bridge", "type", "bridge"]):
            _ip(*step)
    except subprocess.CalledProcessError as error:
        return f"ip {' '.join(error.cmd[1:])} fails here: {error.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None
