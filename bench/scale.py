"""How the gateway's costs grow: partitions, idle connections, members of one group.

One gateway (embedded store, durable, temporary data) is driven with Kafka
requests from this process (our own codec over trio sockets, so the client
costs little):

* partitions: topics of 1,000 partitions are created up to each total; printed:
  the time to create them, the median and p99 time of a Metadata request for
  every topic, the gateway's resident memory, and the
  cores it and its store use idle (20 s without a request, 30 s after the last);
* idle connections: each opens, asks ApiVersions once and stays; printed: the
  gateway's resident memory per connection, and Metadata's time meanwhile;
* one classic consumer group: every member joins (JoinGroup, with the member
  id Kafka asks for first) and syncs; printed: the time from the first join
  to the last member's assignment, Kafka's default 3 s of
  group.initial.rebalance.delay.ms included (it lets every member join the
  first generation).

    python bench/scale.py [--partitions 1000,10000] [--connections 1000,10000] [--members 100,1000] [--chp]
                          [--failover]

With --chp the gateway is a cluster of one on a CHP server (leadership, membership and
topics kept in CHP, as in a cluster of gateways); the time to create partitions then
includes leading them. With --failover a second gateway (node 2, no stores of its own)
joins that cluster first and leads its share of the partitions; after the last total it
is killed (SIGKILL), and printed are the times until the first gateway serves the first
of its partitions again and every partition (ListOffsets answered without an error),
chp.session.timeout.ms included.

Figures only: it never fails on speed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import socket
import statistics
import struct
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_throughput import child, free_port, gateway_command, load  # noqa: E402 - beside this file
from process_cpu import CpuMeter  # noqa: E402 - beside this file

from protocol.kafka import decode_response, encode_request  # noqa: E402
from protocol.kafka.apis import by_name  # noqa: E402

PARTITIONS_PER_TOPIC = 1000
METADATA_SAMPLES = 20
CONTROLLER_SETTLE_S = 2.0
FAILOVER_POLL_S = 0.5
IDLE_REST_S, IDLE_MEASURED_S = 30.0, 20.0  # idle cost: CPU over the second span, after the first (a new topic's work settles)
CONNECT_BATCH = 200  # connections opened at once
IDLE_SETTLE_S = 3.0  # the gateway lets a connection quiet for a second give its receive buffer up
GROUP_TIMEOUT_S = 120.0
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
_correlation = itertools.count(1)


class Connection:
    """One Kafka connection; one request at a time."""

    def __init__(self, stream: trio.SocketStream):
        self.stream = stream

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def call(self, api_name: str, version: int, **fields):
        api = by_name(api_name)
        return decode_response(api.key, version, await self.call_raw(api_name, version, **fields))[1]

    async def call_raw(self, api_name: str, version: int, **fields) -> bytes:
        """The response frame, undecoded: the time until its last byte is the broker's."""
        api = by_name(api_name)
        request = encode_request(api.key, version, next(_correlation), "bench-scale", api.Request(**fields))
        await self.stream.send_all(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", await self._exactly(4))[0]
        return await self._exactly(size)

    async def _exactly(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = await self.stream.receive_some(count - len(data))
            if not chunk:
                raise ConnectionError("the gateway closed the connection")
            data += chunk
        return bytes(data)


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def metadata_ms(port: int) -> tuple[float, float, int]:
    """Median and p99 ms of a Metadata v12 for every topic (to its last byte), and its partitions."""
    connection = await Connection.open(port)
    samples = []
    for _ in range(METADATA_SAMPLES):
        started = time.perf_counter()
        frame = await connection.call_raw("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False)
        samples.append((time.perf_counter() - started) * 1000)
    await connection.stream.aclose()
    partitions = sum(len(topic.partitions) for topic in decode_response(by_name("Metadata").key, 12, frame)[1].topics)
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98], partitions


async def all_led(connection: Connection, total: int) -> None:
    """Until Metadata names a leader for each of `total` partitions (a cluster leads them after
    CreateTopics answered)."""
    while True:
        response = await connection.call("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False)
        if sum(p.leader_id >= 0 for topic in response.topics for p in topic.partitions) >= total:
            return
        await trio.sleep(0.5)


async def idle_cores(pid: int) -> str:
    """Cores the gateway and its embedded store use with no client asking anything."""
    await trio.sleep(IDLE_REST_S)
    meter = CpuMeter(pid)
    await trio.sleep(IDLE_MEASURED_S)
    return ", ".join(f"{name} {(user + system) / IDLE_MEASURED_S:.3f}" for name, (user, system) in meter.used().items())


async def every_partition(connection: Connection) -> list:
    """ListOffsets' topics naming every partition Metadata lists, for the latest offset."""
    metadata = await connection.call("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                                     include_topic_authorized_operations=False)
    ListTopic = by_name("ListOffsets").Request.Topics  # noqa: N806 - a class
    return [ListTopic(name=topic.name, partitions=[ListTopic.Partitions(partition_index=p.partition_index,
                                                                       current_leader_epoch=-1, timestamp=-1)
                                                  for p in topic.partitions]) for topic in metadata.topics]


async def served(connection: Connection, topics: list) -> int:
    """How many of the partitions in `topics` ListOffsets answers without an error."""
    response = await connection.call("ListOffsets", 7, replica_id=-1, isolation_level=0, topics=topics)
    return [p.error_code for topic in response.topics for p in topic.partitions].count(0)


async def brokers_listed(port: int, count: int) -> None:
    """Until Metadata lists `count` brokers (a gateway listens before it joins the cluster)."""
    connection = await Connection.open(port)
    while len((await connection.call("Metadata", 12, topics=[], allow_auto_topic_creation=False,
                                     include_topic_authorized_operations=False)).brokers) < count:
        await trio.sleep(0.2)
    await connection.stream.aclose()


async def fail_over(port: int, victim) -> None:
    """Kill `victim` and time until the gateway on `port` serves every partition (asked every
    FAILOVER_POLL_S: a request for every partition costs the gateway that it measures)."""
    connection = await Connection.open(port)
    topics = await every_partition(connection)
    total = sum(len(topic.partitions) for topic in topics)
    before = await served(connection, topics)
    started = time.perf_counter()
    os.killpg(victim.pid, signal.SIGKILL)
    first = None  # when the first of the victim's partitions was served again
    while True:
        now_served, elapsed = await served(connection, topics), time.perf_counter() - started
        if first is None and (now_served > before or now_served == total):
            first = elapsed
        if now_served == total:
            break
        await trio.sleep(FAILOVER_POLL_S)
    print(f"failover: {total - before} of {total} partitions led by the killed gateway; the first served again "
          f"after {first:.1f} s, all after {elapsed:.1f} s  ({load()})", flush=True)
    await connection.stream.aclose()


async def grow_partitions(port: int, pid: int, totals: list[int]) -> None:
    CreateTopic = by_name("CreateTopics").Request.Topics  # noqa: N806 - a class
    connection = await Connection.open(port)
    created = 0
    for total in totals:
        started = time.perf_counter()
        while created < total:
            topics = [CreateTopic(name=f"scale-{created // PARTITIONS_PER_TOPIC}", num_partitions=PARTITIONS_PER_TOPIC,
                                  replication_factor=1, assignments=[], configs=[])]
            response = await connection.call("CreateTopics", 5, topics=topics, timeout_ms=600_000, validate_only=False)
            if response.topics[0].error_code:
                raise RuntimeError(f"CreateTopics failed: {response.topics[0]}")
            created += PARTITIONS_PER_TOPIC
        await all_led(connection, total)
        seconds = time.perf_counter() - started
        p50, p99, seen = await metadata_ms(port)
        print(f"partitions {seen:6d}: created in {seconds:6.1f} s; Metadata p50 {p50:7.1f} ms, p99 {p99:7.1f} ms; "
              f"gateway RSS {resident_mb(pid):7.0f} MB; idle {await idle_cores(pid)}  ({load()})", flush=True)
    await connection.stream.aclose()


async def idle_connections(port: int, pid: int, counts: list[int]) -> None:
    opened: list[Connection] = []
    before = resident_mb(pid)

    async def open_one() -> None:
        connection = await Connection.open(port)
        await connection.call("ApiVersions", 3, client_software_name="bench", client_software_version="1")
        opened.append(connection)

    for count in counts:
        while len(opened) < count:
            async with trio.open_nursery() as nursery:
                for _ in range(min(CONNECT_BATCH, count - len(opened))):
                    nursery.start_soon(open_one)
        await trio.sleep(IDLE_SETTLE_S)  # as connections that stay idle
        p50, p99, _ = await metadata_ms(port)
        grown = resident_mb(pid) - before
        print(f"idle connections {count:6d}: gateway RSS +{grown:6.0f} MB ({grown * 1024 / count:5.1f} KB each); "
              f"Metadata p50 {p50:6.1f} ms, p99 {p99:6.1f} ms  ({load()})", flush=True)
    for connection in opened:
        await connection.stream.aclose()


def subscription_metadata(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: one topic, no user data."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


async def member(port: int, group: str, results: list) -> None:
    """Join and sync as a consumer does: the id Kafka asks for first, again while a rebalance runs."""
    connection = await Connection.open(port)
    join = {"group_id": group, "session_timeout_ms": 60_000, "rebalance_timeout_ms": 120_000,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [by_name("JoinGroup").Request.Protocols(name="range", metadata=subscription_metadata("t"))]}
    member_id = ""
    while True:
        joined = await connection.call("JoinGroup", 5, member_id=member_id, **join)
        member_id = joined.member_id
        if joined.error_code in (MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS):
            continue
        if joined.error_code:
            raise RuntimeError(f"JoinGroup failed with {joined.error_code}")
        synced = await connection.call("SyncGroup", 3, group_id=group, generation_id=joined.generation_id,
                                       member_id=member_id, group_instance_id=None,
                                       assignments=_assignments(joined))
        if synced.error_code == REBALANCE_IN_PROGRESS:
            continue
        if synced.error_code:
            raise RuntimeError(f"SyncGroup failed with {synced.error_code}")
        results.append(time.perf_counter())
        await connection.stream.aclose()
        return


def _assignments(joined) -> list:
    """The leader's (empty) assignment of every member; nothing from the others."""
    if joined.leader != joined.member_id:
        return []
    return [by_name("SyncGroup").Request.Assignments(member_id=m.member_id, assignment=b"") for m in joined.members]


async def rebalances(port: int, sizes: list[int]) -> None:
    for size in sizes:
        results: list[float] = []
        started = time.perf_counter()
        with trio.fail_after(GROUP_TIMEOUT_S):
            async with trio.open_nursery() as nursery:
                for _ in range(size):
                    nursery.start_soon(member, port, f"scale-group-{size}", results)
        print(f"group of {size:5d} members: all joined and synced in {max(results) - started:6.2f} s  "
              f"({load()})", flush=True)


def chp_ports() -> int:
    """A base port P with P..P+3 free (a CHP server binds four)."""
    while True:
        base = free_port()
        if all(_bindable(port) for port in range(base + 1, base + 4)):
            return base


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default="1000,10000", help="totals of partitions, comma-separated")
    parser.add_argument("--connections", default="1000,10000", help="idle connections, comma-separated")
    parser.add_argument("--members", default="100,1000", help="members of one group, comma-separated")
    parser.add_argument("--chp", action="store_true", help="a cluster of one gateway on a CHP server")
    parser.add_argument("--failover", action="store_true", help="with --chp: a second gateway, killed at the end")
    arguments = parser.parse_args()
    if arguments.failover and not arguments.chp:
        parser.error("--failover needs --chp")
    numbers = {name: [int(n) for n in getattr(arguments, name).split(",") if n]
               for name in ("partitions", "connections", "members")}
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scale-")))
        port = free_port()
        (directory / "gateway").mkdir()
        command = gateway_command(port, directory / "gateway", free_port()) + [
            "--max-connections", str(max(numbers["connections"] + [0]) + 100)]
        if arguments.chp:
            chp_port = chp_ports()
            stack.enter_context(child([sys.executable, "-m", "gateway.chp.chp_server", "--chp-port", str(chp_port)], chp_port,
                                      directory / "chp.log"))
            command += ["--chp-servers", f"127.0.0.1:{chp_port}", "--node-id", "1"]
        process = stack.enter_context(child(command, port, directory / "gateway.log"))
        print(f"gateway pid {process.pid} on 127.0.0.1:{port}, RSS {resident_mb(process.pid):.0f} MB; {load()}")
        second = stack.enter_context(second_gateway(command, directory)) if arguments.failover else None
        if second is not None:
            trio.run(brokers_listed, port, 2)
        trio.run(rebalances, port, numbers["members"])
        trio.run(idle_connections, port, process.pid, numbers["connections"])
        trio.run(grow_partitions, port, process.pid, numbers["partitions"])
        if second is not None:
            trio.run(fail_over, port, second)


def second_gateway(first: list[str], directory: Path):
    """Node 2 of the first gateway's cluster: its beacons go to the first's tower, its data to its stores."""
    time.sleep(CONTROLLER_SETTLE_S)  # the first holds the controller key: topics are created there
    port, data = free_port(), directory / "gateway-2"
    data.mkdir()
    command = gateway_command(port, data, free_port())
    for option in ("--beacon-sub-address", "--beacon-pub-address"):  # the first's tower
        command[command.index(option) + 1] = first[first.index(option) + 1]
    command += ["--chp-servers", first[first.index("--chp-servers") + 1], "--node-id", "2", "--embedded-stores", "0"]
    return child(command, port, directory / "gateway-2.log")


if __name__ == "__main__":
    main()
