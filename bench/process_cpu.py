"""CPU time of the gateway and its embedded store, read from /proc around a run.

Wall-clock rates on a shared machine move with everyone else's load; the CPU a
process spends per request does much less, so that is what these figures are.
"""

from __future__ import annotations

import os
from pathlib import Path

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) seconds of CPU that process `pid` used so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) * TICK_S, int(fields[12]) * TICK_S  # utime, stime: fields 14 and 15


def store_pid(gateway_pid: int) -> int | None:
    """The embedded store, a child process of the gateway (`python -m gateway.mesh.store`)."""
    for task in Path(f"/proc/{gateway_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"gateway.mesh.store" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    return None


class CpuMeter:
    """CPU used by the gateway and its store since the meter was made (or last reset)."""

    def __init__(self, gateway_pid: int):
        self.pids = {"gateway": gateway_pid, "store": store_pid(gateway_pid)}
        self.reset()

    def reset(self) -> None:
        self.start = {name: cpu_seconds(pid) for name, pid in self.pids.items() if pid}

    def used(self) -> dict[str, tuple[float, float]]:
        """name -> (user, system) seconds since the start."""
        used = {}
        for name, (user, system) in self.start.items():
            now_user, now_system = cpu_seconds(self.pids[name])
            used[name] = (now_user - user, now_system - system)
        return used

    def per(self, count: int) -> str:
        """What each of `count` requests cost, in µs of CPU per process (user + system)."""
        if not count:
            return "no requests"
        return "; ".join(f"{name} {(u + s) / count * 1e6:.0f} µs ({u / count * 1e6:.0f} user)"
                         for name, (u, s) in self.used().items())
