"""Our Dafka store against the C reference store, both fed by the C reference producer.

The C nodes (zeromq/dafka: dafka_towerd, dafka_stored, dafka_perf_store,
dafka_perf_consumer) are built beside the project and named by --dafka-bin;
without them this prints why and exits 0. A C tower relays the beacons. For
each record size and run, interleaved (C store, our store, C store, ...),
a fresh store with an empty data directory is started, dafka_perf_store
publishes --count records and waits until every one is ACKed, and its
"mean throughput" (ACKed records/s, timed from the first publish to the last
ACK) is taken with the store process's CPU time (utime+stime) per record.
The C store writes LevelDB without sync; ours runs with --store-fsync
(default interval: ACK once written, fsync at most once a second).
After the last run of each store, dafka_perf_consumer (offset reset
earliest) reads the first READ_BACK records back from that store, as an
interop check.
Figures are printed, never judged; medians over --runs.
Usage: python -m bench.c_reference --dafka-bin DIR [--count 300000] [--sizes 100,1024] [--runs 3] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C_TOOLS = ("dafka_towerd", "dafka_stored", "dafka_perf_store", "dafka_perf_consumer")
STORE_SETTLE_S = 2.0  # a store started, before the producer: both kinds get the same
RUN_TIMEOUT_S = 180  # a store that never ACKs them all (the C producer waits for ever)
READ_BACK = 100_000  # records the C consumer reads back (the first of the run's)
READ_TIMEOUT_S = 60
THROUGHPUT = re.compile(rb"mean throughput: (\d+) \[msg/s\]")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def process_cpu_s(pid: int) -> float:
    """utime + stime of a running process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Mesh:
    """The C tower's endpoints, as arguments to the C nodes and to ours."""

    def __init__(self, binaries: Path, work: Path):
        self.binaries, self.work = binaries, work
        self.sub, self.pub = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"

    def c_node(self, tool: str, *arguments: str) -> list[str]:
        return [str(self.binaries / tool), "--pub", self.pub, "--sub", self.sub, *arguments]

    def c_config(self, name: str, text: str) -> str:
        path = self.work / f"{name}.cfg"
        path.write_text(text)
        return str(path)

    def start_store(self, kind: str, directory: Path, fsync: str) -> subprocess.Popen:
        if kind == "C":
            config = self.c_config("store", f"store\n    db = {directory}\n")
            command = self.c_node("dafka_stored", "-c", config)
        else:
            # The C tower announces a node beaconing no host at its own interface address, not
            # 127.0.0.1, where our store's data sockets are bound: it names its host itself.
            command = [sys.executable, "-m", "gateway.mesh.store", "--store-db", str(directory),
                       "--store-fsync", fsync, "--beacon-pub-address", self.pub, "--beacon-sub-address", self.sub,
                       "--beacon-address", "127.0.0.1", "--log-level", "warning", "--exit-on-stdin-eof"]
        return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def measure(mesh: Mesh, kind: str, size: int, count: int, fsync: str, read_back: bool) -> dict:
    """One store, fresh: the C producer's ACKed records/s into it and its CPU per record."""
    with tempfile.TemporaryDirectory(dir=mesh.work) as directory:
        store = mesh.start_store(kind, Path(directory) / "db", fsync)
        try:
            time.sleep(STORE_SETTLE_S)
            store_cpu, producer_cpu = process_cpu_s(store.pid), children_cpu_s()
            rate = run_c_tool(mesh.c_node("dafka_perf_store", str(count), str(size)), RUN_TIMEOUT_S)
            figures = {"rate": rate, "store_us": (process_cpu_s(store.pid) - store_cpu) / count * 1e6,
                       "producer_us": (children_cpu_s() - producer_cpu) / count * 1e6}
            if read_back:
                config = mesh.c_config("consumer", "consumer\n    offset\n        reset = earliest\n")
                read = mesh.c_node("dafka_perf_consumer", "-c", config, str(min(count, READ_BACK)), str(size))
                figures["consumer_rate"] = run_c_tool(read, READ_TIMEOUT_S)
            return figures
        finally:
            stop(store)


def run_c_tool(command: list[str], timeout_s: float) -> float | None:
    """The tool's "mean throughput" in records/s; None if it did not finish in time."""
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None
    found = THROUGHPUT.search(done.stdout)
    return float(found.group(1)) if found else None


def median(values: list) -> str:
    known = [value for value in values if value is not None]
    if len(known) < len(values):
        return f"{len(values) - len(known)} of {len(values)} timed out"
    return f"{statistics.median(known):,.1f}"


def report(kind: str, size: int, runs: list[dict]) -> None:
    rates = [run["rate"] for run in runs]
    print(f"store={kind:6} size={size}B ACKed records/s: median={median(rates)} "
          f"runs={[None if rate is None else int(rate) for rate in rates]} "
          f"store cpu/record={median([run['store_us'] for run in runs])}us "
          f"runs={[round(run['store_us'], 1) for run in runs]} "
          f"C producer cpu/record={median([run['producer_us'] for run in runs])}us", flush=True)
    read = [run["consumer_rate"] for run in runs if "consumer_rate" in run]
    if read:
        outcome = "timed out" if read[0] is None else f"{read[0]:,.0f} records/s"
        print(f"store={kind:6} size={size}B C consumer reading back its first {READ_BACK:,} (earliest): {outcome}",
              flush=True)


def main(binaries: Path | None, count: int, sizes: list[int], runs: int, fsync: str, parent: str | None) -> None:
    if binaries is None or not all((binaries / tool).is_file() for tool in C_TOOLS):
        print(f"C reference nodes not found (--dafka-bin {binaries}: needs {', '.join(C_TOOLS)}); nothing measured")
        return
    kinds = ("C", "python")
    print(f"C store: LevelDB without sync; our store: --store-fsync {fsync}; {count:,} records a run", flush=True)
    with tempfile.TemporaryDirectory(dir=parent) as work:
        mesh = Mesh(binaries, Path(work))
        tower = subprocess.Popen(mesh.c_node("dafka_towerd"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            for size in sizes:
                figures: dict[str, list[dict]] = {kind: [] for kind in kinds}
                for run in range(runs):
                    for kind in kinds:
                        figures[kind].append(measure(mesh, kind, size, count, fsync, run == runs - 1))
                for kind in kinds:
                    report(kind, size, figures[kind])
        finally:
            stop(tower)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dafka-bin", type=Path, help="directory of the built C reference nodes")
    parser.add_argument("--count", type=int, default=300_000, help="records per run")
    parser.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fsync", choices=("interval", "batch"), default="interval", help="our store's store.fsync")
    parser.add_argument("--dir", help="where the stores' data directories go (e.g. /dev/shm); default: TMPDIR")
    arguments = parser.parse_args()
    main(arguments.dafka_bin, arguments.count, [int(size) for size in arguments.sizes.split(",")], arguments.runs,
         arguments.fsync, arguments.dir)
