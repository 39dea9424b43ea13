"""compose.yaml's cluster under a compose project of its own, for tests.

The image is built offline (scripts/docker-image.sh: a debootstrap base, wheels made on the
host), so that a machine with a Docker Engine and no registry runs these tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("tower", "tower-2", "store-1", "store-2", "store-3", "chp", "chp-backup", "gateway", "gateway-2",
            "gateway-3")
STORES = ("store-1", "store-2", "store-3")
COMMAND_TIMEOUT_S = 300.0  # the first `up` of a clean machine creates every container
HEALTHY_TIMEOUT_S = 180.0
SKIP_STATUS = 77  # scripts/docker-image.sh: the base image cannot be made here


def run(command: list[str], *, env: dict | None = None, check: bool = True,
        timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


def answers(command: list[str]) -> bool:
    try:
        return run(command, check=False, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def compose_tool() -> list[str]:
    """Compose v2 (the docker CLI plugin) where it answers, else Compose 1 (docker-compose)."""
    for tool in (["docker", "compose"], ["docker-compose"]):
        if answers([*tool, "version"]):
            return tool
    pytest.skip("neither `docker compose` nor `docker-compose` answers")


def image() -> str:
    """The image of this checkout, built offline; Docker's layer cache makes an unchanged
    rebuild take a second. One tag per checkout, so that two checkouts' runs do not mix."""
    if not answers(["docker", "info"]):
        pytest.skip("no Docker Engine answers (`docker info` failed)")
    tag = "dafka-gateway:test-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    done = run(["bash", "scripts/docker-image.sh", tag], env={**os.environ, "PYTHON": sys.executable},
               check=False)
    if done.returncode == SKIP_STATUS:
        pytest.skip(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"scripts/docker-image.sh exited with {done.returncode}:\n{done.stderr}")
    return tag


class Cluster:
    """One compose project: `docker compose -f compose.yaml -p <unique name>`."""

    def __init__(self, tool: list[str], image: str, host_ports: tuple[int, int, int],
                 files: tuple[str, ...] = ("compose.yaml",), env: dict[str, str] | None = None):
        self.project = "dafkatest" + uuid.uuid4().hex[:10]
        self.host_port = host_ports[0]
        self.host_ports = host_ports
        self.image = image
        self.command = [*tool, *(f for name in files for f in ("-f", str(ROOT / name))), "-p", self.project]
        self.env = {**os.environ, "DAFKA_IMAGE": image, **{  # one host port per gateway
            f"DAFKA_HOST_PORT{suffix}": str(port) for suffix, port in zip(("", "_2", "_3"), host_ports, strict=True)},
            **(env or {})}
        self._containers: dict[str, str] = {}  # service -> container id, until `down` removes them

    @property
    def bootstrap(self) -> str:
        return f"localhost:{self.host_port}"

    @property
    def bootstraps(self) -> str:
        """Every gateway's host port."""
        return ",".join(f"localhost:{port}" for port in self.host_ports)

    def compose(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        return run([*self.command, *arguments], env=self.env, check=check)

    def up(self) -> None:
        """Start every service and return once all are healthy (Compose 1 has no --wait)."""
        self._containers.clear()
        self.compose("up", "-d", "--no-build")
        self.wait_healthy(*SERVICES)

    def down(self, *, volumes: bool) -> None:
        self._containers.clear()
        self.compose("down", "--remove-orphans", *(["--volumes"] if volumes else []))

    def container(self, service: str) -> str:
        """The service's container id, asked of Compose once: the tests poll the containers through
        `docker` itself, since each Compose 1 command costs half a second of a core."""
        if service not in self._containers:
            found = self.compose("ps", "--all", "-q", service).stdout.split()
            assert len(found) == 1, f"{service}: containers {found}"
            self._containers[service] = found[0]
        return self._containers[service]

    def state(self, service: str) -> dict:
        return json.loads(run(["docker", "inspect", "-f", "{{json .State}}", self.container(service)]).stdout)

    def wait_healthy(self, *services: str) -> None:
        deadline = time.monotonic() + HEALTHY_TIMEOUT_S
        waiting = list(services)
        while waiting:
            state = self.state(waiting[0])
            if state["Status"] == "running" and state.get("Health", {}).get("Status") == "healthy":
                waiting.pop(0)
                continue
            if state["Status"] not in ("created", "running", "restarting") or time.monotonic() > deadline:
                raise RuntimeError(f"{waiting[0]} is not healthy: {json.dumps(state)}\n{self.logs()}")
            time.sleep(0.2)

    def network(self) -> str:
        """The project's network, as the gateway's container is attached to it."""
        networks = json.loads(run(["docker", "inspect", "-f", "{{json .NetworkSettings.Networks}}",
                                   self.container("gateway")]).stdout)
        (name,) = networks
        return name

    def log(self, service: str) -> str:
        """Everything `service` logged, its runs before a restart included."""
        done = run(["docker", "logs", self.container(service)])
        return done.stdout + done.stderr

    def exec(self, service: str, *command: str) -> subprocess.CompletedProcess:
        return run(["docker", "exec", self.container(service), *command], check=False)

    def logs(self, lines: int = 60) -> str:
        return self.compose("logs", "--no-color", "--tail", str(lines), check=False).stdout
