"""Mesh nodes as real processes (`python -m gateway.mesh.X`) for tests."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from gateway.settings.table import MeshSettings

ROOT = Path(__file__).resolve().parents[2]


def config_arguments(config: MeshSettings) -> list[str]:
    return [
        f"--beacon-interval-ms={config.beacon_interval_ms}",
        f"--beacon-timeout-ms={config.beacon_timeout_ms}",
        f"--beacon-sub-address={','.join(config.beacon_sub_address)}",
        f"--beacon-pub-address={','.join(config.beacon_pub_address)}",
        f"--mesh-bind-host={config.mesh_bind_host}",
    ]


class NodeProcess:
    """One node process, started under `prefix` if given (`ip netns exec NS`, say); its stderr
    (the log) goes to a file the test can watch."""

    def __init__(self, module: str, arguments: list[str], log_path: Path, *, stdin=None, stdout=None,
                 prefix: Sequence[str] = ()):
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*prefix, sys.executable, "-m", module, *arguments],
                cwd=ROOT, stdin=stdin, stdout=stdout, stderr=log,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )

    @classmethod
    def tower(cls, config: MeshSettings, log_path: Path, prefix: Sequence[str] = ()) -> "NodeProcess":
        return cls("gateway.mesh.tower", [f"--tower-sub-address={config.tower_sub_address}",
                                          f"--tower-pub-address={config.tower_pub_address}"], log_path, prefix=prefix)

    @classmethod
    def store(cls, config: MeshSettings, directory: Path, log_path: Path, prefix: Sequence[str] = ()) -> "NodeProcess":
        return cls("gateway.mesh.store", [*config_arguments(config), f"--store-db={directory}"], log_path,
                   prefix=prefix)

    def log_text(self) -> str:
        return self.log_path.read_text()

    def wait_for_log(self, text: str, count: int = 1, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while self.log_text().count(text) < count:
            assert self.process.poll() is None, f"{self.log_path.name} exited:\n{self.log_text()}"
            assert time.monotonic() < deadline, f"no {text!r} in {self.log_path.name}:\n{self.log_text()}"
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
