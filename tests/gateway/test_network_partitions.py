"""Network partitions in a cluster (issue 16): every process on a host of its own (a network
namespace with its own address, tests/gateway/hosts.py), one host cut off the network while an
idempotent producer writes, then healed. Cut off, a leader's partitions move and no write it takes
is acknowledged once its successor began; a store or the active CHP server cut off costs the
clients nothing. Every acknowledged record is read back once, at the offset it was given."""

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from gateway.mesh.store.entry import BadEntry, EntryReader
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import CLIENTS, Got
from tests.gateway.groups import wait_until
from tests.gateway.hosts import private_network, unsupported
from tests.gateway.test_cluster import (
    PARTITIONS,
    Acknowledged,
    ChpServers,
    create_topic_through,
    end_offsets,
    gateway_cluster,
    history_errors,
    leaders,
    leadership_history,
    metadata,
    produce_until,
    spread_over,
)
from tests.gateway.test_cluster_fencing import produce_error, send_produce
from tests.gateway.test_validation import Connection

TOPIC = "partitioned"
# A host cut off neither answers nor resets a connection: a client learns only from a timeout
# that a request is lost and sends it to the new leader (librdkafka waits socket.timeout.ms, 60 s
# by default, for a request in flight).
PRODUCER = {"enable.idempotence": True, "socket.timeout.ms": 5000, "request.timeout.ms": 5000}
ACKNOWLEDGED_PER_PARTITION = 50  # at each step
# The deposed leader's mesh peers do not expire while its tower is silent too: it waits for its
# stores' ACKs until the request's timeout.
PROBE_TIMEOUT_MS = 5000
CHP_FAIL_OVER_SESSION_MS = 12000


@pytest.fixture
def network():
    reason = unsupported()
    if reason:
        pytest.skip(reason)
    with private_network() as made:
        yield made


@contextmanager
def producing(gateways, acknowledged: list[Acknowledged]) -> Iterator[None]:
    """TOPIC created, led by every gateway, and an idempotent producer writing to each of its
    partitions through any gateway until the end."""
    create_topic_through(gateways[0], TOPIC)
    wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
    stop = threading.Event()
    bootstrap = ",".join(gateway.bootstrap for gateway in gateways)
    thread = threading.Thread(target=produce_until, args=(bootstrap, TOPIC, acknowledged, stop), kwargs=PRODUCER)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def more_acknowledged(acknowledged: list[Acknowledged], partitions=range(PARTITIONS), after: float = 0.0) -> None:
    """Until each of `partitions` had records acknowledged that were answered after `after`."""
    def enough():
        counts = Counter()
        for answered in reversed(acknowledged):  # in the order answered: the newest last
            if answered.at <= after:
                break
            counts[answered.partition] += 1
        return all(counts[p] >= ACKNOWLEDGED_PER_PARTITION for p in partitions)
    wait_until(enough, 60, f"records acknowledged on partitions {list(partitions)}")


def read_back(gateways, acknowledged: list[Acknowledged]) -> list[Got]:
    """Every record of TOPIC, checked against what was acknowledged: each at its offset, offsets
    0..end-1 once each and in order, no value twice (idempotence)."""
    ends = end_offsets(gateways[0], TOPIC)
    _, consume = CLIENTS["confluent-kafka"]
    got = consume(gateways[1].bootstrap, TOPIC, list(range(PARTITIONS)), sum(ends))
    errors = history_errors(acknowledged, got, ends)
    assert not errors, f"ends {ends}:\n{errors}\n{leadership_history(gateways, TOPIC)}"
    assert len({g.value for g in got}) == len(got), "a record written twice"
    return got


def test_a_leader_cut_off_is_deposed_and_acknowledges_no_write_after_that(tmp_path, network):
    """Gateway 3 is cut off while it leads partitions: the others take them over and the producer
    goes on. A client on the cut-off side, which still reaches it, gets no write acknowledged by
    it: neither one sent at the cut nor one sent once its successor took writes. Healed, it rejoins
    as a follower, and leads its partitions again when elected."""
    acknowledged: list[Acknowledged] = []
    with gateway_cluster(tmp_path, hosts=network.host) as gateways:
        with producing(gateways, acknowledged):
            more_acknowledged(acknowledged)
            victim, host = gateways[2], network.host("gateway-3")
            led = [p for p, leader in leaders(gateways[0], TOPIC).items() if leader == 3]
            inside = Connection(victim.port, sock=host.connect(victim.port, timeout=60))
            try:
                cut_at = time.monotonic()
                network.cut(host)
                send_produce(inside, led[0], b"sent at the cut", TOPIC, PROBE_TIMEOUT_MS)
                for survivor in gateways[:2]:
                    wait_until(lambda g=survivor: spread_over(g, TOPIC, {1, 2}), 30, "its partitions moved")
                    assert set(metadata(survivor).brokers) == {1, 2}
                more_acknowledged(acknowledged, led, after=cut_at)
                assert produce_error(inside) != ErrorCode.NONE
                send_produce(inside, led[0], b"sent after the takeover", TOPIC, PROBE_TIMEOUT_MS)
                assert produce_error(inside) != ErrorCode.NONE
            finally:
                inside.close()
            network.heal(host)
            wait_until(lambda: set(metadata(gateways[0]).brokers) == {1, 2, 3}, 30, "it rejoined")
            wait_until(lambda: leaders(victim, TOPIC) == leaders(gateways[0], TOPIC), 30, "it follows the others")
            admin = AdminClient({"bootstrap.servers": victim.bootstrap})
            admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, p) for p in led]).result(30)
            wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "it leads again")
            more_acknowledged(acknowledged, led, after=time.monotonic())
        got = read_back(gateways, acknowledged)
    assert not {b"sent at the cut", b"sent after the takeover"} & {g.value for g in got}
    for partition in led:
        epochs = [g.leader_epoch for g in sorted(got, key=lambda g: g.offset) if g.partition == partition]
        assert epochs == sorted(epochs), f"partition {partition}: an older leader's write after a newer one's"
        assert len(set(epochs)) >= 3, f"partition {partition}: not led by three epochs in turn: {set(epochs)}"


def test_a_store_cut_off_costs_acks_all_nothing_and_catches_up_when_healed(tmp_path, network):
    """Three stores, min.insync.replicas=2: with one cut off the others acknowledge every write;
    healed, it counts as live again and fetches what it missed."""
    acknowledged: list[Acknowledged] = []
    options = ("--min-insync-replicas", "2", "--expected-stores", "3")
    with gateway_cluster(tmp_path, 3, *options, hosts=network.host, stores="abc") as gateways:
        with producing(gateways, acknowledged):
            more_acknowledged(acknowledged)
            host = network.host("store-c")
            network.cut(host)
            for gateway in gateways:
                wait_until(lambda g=gateway: live_stores(g) == 2, 30, "the gateways saw the store go")
            more_acknowledged(acknowledged, after=time.monotonic())
            assert sum(stored_bytes(tmp_path / "store-c").values()) < sum(stored_bytes(tmp_path / "store-a").values())
            network.heal(host)
            for gateway in gateways:
                wait_until(lambda g=gateway: live_stores(g) == 3, 30, "the gateways saw the store return")
            more_acknowledged(acknowledged, after=time.monotonic())
        read_back(gateways, acknowledged)
        log = (tmp_path / "store-c.log").read_text
        wait_until(lambda: stored_bytes(tmp_path / "store-c") == stored_bytes(tmp_path / "store-a"), 30,
                   f"the store that was cut off holds what the others hold; its log before the wait:\n{log()[-3000:]}")


def live_stores(gateway) -> int:
    """The live stores `gateway` last counted."""
    counts = [line.split("live=")[1].split()[0] for line in gateway.log_path.read_text().splitlines()
              if "event='live_stores_changed'" in line]
    return int(counts[-1]) if counts else 0


def stored_bytes(store: Path) -> dict[str, int]:
    """Bytes of TOPIC's records in `store`, per partition address."""
    subject = store / "log" / f"s-{TOPIC.encode().hex()}"
    return {partition.name: sum(map(entries_bytes, partition.glob("*.log")))
            for partition in subject.iterdir() if partition.is_dir()}


def entries_bytes(segment: Path) -> int:
    """The bytes of the entries a segment file starts with: not the space reserved after them."""
    with segment.open("rb") as file:
        reader = EntryReader(file.fileno(), 0, os.fstat(file.fileno()).st_size)
        with suppress(BadEntry):
            while not reader.at_end():
                reader.header()
                reader.content()
        return reader.position


def test_the_active_chp_server_cut_off_leaves_the_cluster_serving(tmp_path, network):
    """The CHP primary, active, is cut off: the gateways move to the backup, which takes over,
    and the cluster goes on serving produce and cluster changes (a new topic). Healed, the primary
    yields to the backup, which took over after it, and follows it. The gateways' sessions outlast
    their move to the backup (after 5 s without HUGZ): with the 3 s of the other tests the
    controller key may expire at the backup before it takes over, and the controller steps down."""
    acknowledged: list[Acknowledged] = []
    pair = ChpServers(tmp_path, ("primary", "backup"), "--chp-hugz-interval-ms", "200", "--chp-flush-interval-ms", "200",
                      hosts=network.host)
    with gateway_cluster(tmp_path, hosts=network.host, chp=pair,
                         session_timeout_ms=CHP_FAIL_OVER_SESSION_MS) as gateways:
        with producing(gateways, acknowledged):
            more_acknowledged(acknowledged)
            network.cut(network.host("chp-primary"))
            backup_log, primary_log = tmp_path / "chp-backup.log", tmp_path / "chp-primary.log"
            wait_until(lambda: "new='ACTIVE'" in backup_log.read_text(), 30, "the backup took over")
            backup = network.host("chp-backup").address
            for gateway in gateways:
                wait_until(lambda g=gateway: f"event='chp.synced' server=('{backup}'" in g.log_path.read_text(), 30,
                           "the gateways follow the backup")
            more_acknowledged(acknowledged, after=time.monotonic())
            create_topic_through(gateways[1], "after-the-cut")
            wait_until(lambda: len(leaders(gateways[2], "after-the-cut")) == PARTITIONS
                       and -1 not in leaders(gateways[2], "after-the-cut").values(), 30, "the new topic is led")
            network.heal(network.host("chp-primary"))
            wait_until(lambda: "event='chp.yielded'" in primary_log.read_text(), 30, "the primary yielded")
            more_acknowledged(acknowledged, after=time.monotonic())
            assert set(metadata(gateways[0]).brokers) == {1, 2, 3}
        read_back(gateways, acknowledged)
