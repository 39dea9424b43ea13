"""The real gateway as a child process, on free ports, for integration tests."""

from __future__ import annotations

from gateway.testing.broker_process import BrokerProcess, children

__all__ = ["RUNNING", "GatewayProcess", "children"]

# Started and not stopped: conftest stops those a test leaves behind, even a failed one.
RUNNING: set[GatewayProcess] = set()


class GatewayProcess(BrokerProcess):
    """The package's broker process with short beacon and head intervals, tracked until stopped."""

    mesh_options = ("--beacon-interval-ms", "200", "--head-interval-ms", "200")

    def spawn(self) -> None:
        super().spawn()
        RUNNING.add(self)

    def stop(self, timeout: float = 20.0) -> int:
        code = super().stop(timeout)
        RUNNING.discard(self)
        return code
