"""The mesh binds the interface it is given: loopback by default, never every one unless asked."""

import ipaddress
import os
from pathlib import Path

from tests.gateway.server import GatewayProcess, children
from tests.gateway.test_startup_failures import failed_start

LISTEN = "0A"  # the state column of /proc/net/tcp


def listening_addresses(pid: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the TCP sockets process `pid` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                found.add(_address(fields[1].split(":")[0]))
    return found


def _address(hex_ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    words = [bytes.fromhex(hex_ip[i:i + 8])[::-1] for i in range(0, len(hex_ip), 8)]
    address = ipaddress.ip_address(b"".join(words))
    return getattr(address, "ipv4_mapped", None) or address


def gateway_and_store_addresses(tmp_path: Path, *options: str) -> tuple[set, set]:
    """What a gateway started with `options` and its store listen on, once it serves."""
    server = GatewayProcess(tmp_path / "gateway", *options).start()
    try:
        stores = children(server.process.pid)
        assert len(stores) == 1
        return listening_addresses(server.process.pid), listening_addresses(stores[0])
    finally:
        server.stop()


def test_by_default_the_gateway_and_its_store_listen_on_loopback_only(tmp_path):
    for addresses in gateway_and_store_addresses(tmp_path):
        assert addresses and all(address.is_loopback for address in addresses), addresses


def test_every_interface_only_when_asked(tmp_path):
    for addresses in gateway_and_store_addresses(tmp_path, "--mesh-bind-host", "*"):
        assert ipaddress.ip_address("0.0.0.0") in addresses


def test_a_mesh_bind_host_not_of_this_machine_is_a_clear_start_up_error(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--mesh-bind-host", "192.0.2.1")  # TEST-NET-1
    assert "cannot bind a mesh socket on 192.0.2.1 (mesh.bind.host)" in failed_start(server)
