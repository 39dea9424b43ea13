"""A paused leader of a cluster never gets a write acknowledged after its successor began
(issue 16): the successor fenced the stores at a newer leader epoch before it published.
A leader restarted before its session ended leads its partitions again, at a newer epoch.
A takeover too few stores accept is retried, partition by partition, holding nothing else up.

The leader of one partition is stopped with SIGSTOP until the controller gives the partition
to another gateway at a higher epoch, which takes produce. A produce sent to the paused one
before it wakes (the kernel holds the request for it) is answered with an error once it runs
again, never success, and its record is on no store: a consumer reads exactly what was
acknowledged.
"""

import re
import signal
import socket
import struct

import trio

from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch
from tests.gateway.clients import CLIENTS, Sent
from tests.gateway.groups import wait_until
from tests.gateway.test_acks import start_store
from tests.gateway.test_cluster import PARTITIONS, create_topic_through, gateway_cluster, spread_over
from tests.gateway.test_deposed_leader import on_the_mesh
from tests.gateway.test_validation import Connection
from tests.mesh.conftest import fast_config
from tests.protocol.records.bad_batches import good

TOPIC = "paused"
METADATA, PRODUCE = by_name("Metadata"), by_name("Produce")
PRODUCE_VERSION = 9


def leader_and_epoch(gateway, number: int) -> tuple[int, int]:
    connection = Connection(gateway.port)
    try:
        described = connection.call(METADATA, 12, METADATA.Request(topics=[METADATA.Request.Topics(name=TOPIC)]))
    finally:
        connection.close()
    partition = next(p for p in described.topics[0].partitions if p.partition_index == number)
    return partition.leader_id, partition.leader_epoch


def send_produce(connection: Connection, number: int, value: bytes, topic: str = TOPIC,
                 timeout_ms: int = 20000) -> None:
    """An acks=all Produce of one record, sent without waiting for the answer."""
    Data = PRODUCE.Request.TopicData
    connection.correlation_id += 1
    request = encode_request(PRODUCE.key, PRODUCE_VERSION, connection.correlation_id, "paused", PRODUCE.Request(
        acks=-1, timeout_ms=timeout_ms, topic_data=[
            Data(name=topic, partition_data=[Data.PartitionData(index=number, records=good([value]))])]))
    connection.sock.sendall(struct.pack(">i", len(request)) + request)


def produce_error(connection: Connection) -> int:
    size = struct.unpack(">i", connection.sock.recv(4, socket.MSG_WAITALL))[0]
    _, response = decode_response(PRODUCE.key, PRODUCE_VERSION, connection.sock.recv(size, socket.MSG_WAITALL))
    return response.responses[0].partition_responses[0].error_code


def stored_values(gateway) -> list[bytes]:
    """Every record value the stores hold of the topic."""
    async def read(storage):
        heads = await storage.heads(TOPIC)
        return [record.value for address, head in heads.items()
                async for _, content in storage.contents(TOPIC, address, head)
                for record in RecordBatch(memoryview(content)).records()]

    return trio.run(on_the_mesh, gateway, read)


def test_a_paused_leader_gets_no_write_acknowledged_after_its_successor_began(tmp_path):
    produce, consume = CLIENTS["confluent-kafka"]
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        victim = gateways[2]  # node 3, not the controller
        number = next(n for n in range(6) if leader_and_epoch(gateways[0], n)[0] == 3)
        _, epoch = leader_and_epoch(gateways[0], number)
        before = [Sent(value=b"before-%d" % n, partition=number) for n in range(5)]
        assert produce(victim.bootstrap, TOPIC, before, acks="all") == list(range(5))
        connection = Connection(victim.port)  # accepted while it runs
        victim.process.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: leader_and_epoch(gateways[0], number)[1] > epoch
                       and leader_and_epoch(gateways[0], number)[0] in {1, 2}, 60,
                       "the controller moved the partition at a newer epoch")
            after = [Sent(value=b"after-%d" % n, partition=number) for n in range(5)]
            assert produce(gateways[0].bootstrap, TOPIC, after, acks="all") == list(range(5, 10))
            send_produce(connection, number, b"deposed")  # held by the kernel until the leader runs
        finally:
            victim.process.send_signal(signal.SIGCONT)
        try:
            answered = produce_error(connection)
        finally:
            connection.close()
        assert answered == ErrorCode.NOT_LEADER_OR_FOLLOWER
        wait_until(lambda: "partition_leadership_lost" in victim.log_path.read_text(), 30,
                   "the paused leader learned it lost the partition")
        acknowledged = [s.value for s in before + after]
        got = consume(gateways[1].bootstrap, TOPIC, [number], len(acknowledged))
        assert [g.value for g in got] == acknowledged
        assert sorted(stored_values(gateways[0])) == sorted(acknowledged)


def test_a_leader_restarted_within_its_session_leads_again_at_a_newer_epoch(tmp_path):
    """Its partitions stay its own (its key never expired), at the epoch its earlier life
    fenced the stores with: the stores refuse the equal epoch of another claimant, so it
    claims the next epoch in CHP and leads at that one."""
    produce, consume = CLIENTS["confluent-kafka"]
    with gateway_cluster(tmp_path, session_timeout_ms=60000) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        restarted = gateways[2]
        numbers = [n for n in range(6) if leader_and_epoch(gateways[0], n) == (3, 0)]
        before = [Sent(value=b"before-%d" % n, partition=n) for n in numbers]
        produce(restarted.bootstrap, TOPIC, before, acks="all")
        restarted.kill()
        restarted.start()
        wait_until(lambda: all(leader_and_epoch(gateways[0], n) == (3, 1) for n in numbers), 60,
                   "the restarted gateway leads its partitions at the next epoch")
        after = [Sent(value=b"after-%d" % n, partition=n) for n in numbers]
        assert produce(restarted.bootstrap, TOPIC, after, acks="all") == [1] * len(numbers)
        got = consume(gateways[1].bootstrap, TOPIC, numbers, 2 * len(numbers))
        assert sorted(g.value for g in got) == sorted(s.value for s in before + after)


def test_a_takeover_too_few_stores_accept_is_retried_and_holds_nothing_up(tmp_path):
    """expected.stores=2 with one store running: no claim can win (both must accept, as either
    may hold an acknowledged write), so the partitions stay unled and each takeover is retried
    with a warning per attempt; meanwhile the gateway goes on serving (a topic is still created,
    which waits for the registry's lock). Once the second store comes, every partition is led."""
    produce, _ = CLIENTS["confluent-kafka"]
    with gateway_cluster(tmp_path, 1, "--expected-stores", "2", "--expected-stores-wait-ms", "100") as (gateway,):
        create_topic_through(gateway, TOPIC)
        wait_until(lambda: retried(gateway) == set(range(PARTITIONS)), 30, "every takeover failed and was retried")
        create_topic_through(gateway, "meanwhile")
        assert "partition_led" not in gateway.log_path.read_text()
        tower = f"tcp://127.0.0.1:{gateway.tower_sub}", f"tcp://127.0.0.1:{gateway.tower_pub}"
        second = start_store(fast_config(tower_sub_address=tower[0], tower_pub_address=tower[1],
                                         beacon_sub_address=tower[:1], beacon_pub_address=tower[1:]), tmp_path, "b")
        try:
            wait_until(lambda: gateway.log_path.read_text().count("partition_led") == 2 * PARTITIONS, 30,
                       "every partition led once both stores accepted")
            sent = [Sent(value=b"led-%d" % n, partition=n) for n in range(PARTITIONS)]
            assert produce(gateway.bootstrap, TOPIC, sent, acks="all") == [0] * PARTITIONS
        finally:
            second.stop()


def retried(gateway) -> set[int]:
    """The partitions whose takeover failed again after a retry."""
    return {int(re.search(r"partition=(\d+)", line)[1]) for line in gateway.log_path.read_text().splitlines()
            if "partition_takeover_failed" in line and int(re.search(r"attempt=(\d+)", line)[1]) >= 2}
