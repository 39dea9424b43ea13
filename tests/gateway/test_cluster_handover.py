"""Controlled shutdown and preferred leaders in a cluster of gateways (issue 16, items 5 and 6).

SIGTERM makes a gateway hand the leadership of its partitions to others before it
stops: an idempotent producer with default settings and a consumer running
meanwhile see no failed delivery, no loss and no duplicate, also through a rolling
restart of every gateway in turn, after each of which the auto rebalance gives the
restarted gateway its preferred partitions back. ElectLeaders and reassignments
move leadership as Kafka's admin clients expect.
"""

import os
import re
import signal
import threading
import time
from collections import Counter

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka import ElectionType as ConfluentElection
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import ElectionType

from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import CLIENTS, Sent
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_cluster import PARTITIONS, create_topic_through, gateway_cluster, metadata, spread_over

TOPIC = "handed"
FAST_REBALANCE = ("--leader-imbalance-check-interval-seconds", "1")


class Traffic:
    """An idempotent producer (librdkafka's defaults otherwise) and a consumer of every partition,
    each in a thread, until `stop()`."""

    def __init__(self, gateways):
        self.bootstrap = ",".join(g.bootstrap for g in gateways)
        self.acknowledged: list[bytes] = []
        self.failed: list[str] = []
        self.consumed: dict[tuple[int, int], bytes] = {}  # (partition, offset) -> value
        self._stop = threading.Event()
        self._produced = threading.Event()  # every answer in: only then may the consumer compare counts
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]
        for thread in self._threads:
            thread.start()

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})

        def delivered(error, message):
            if error is None:
                self.acknowledged.append(message.value())
            else:
                self.failed.append(str(error))

        number = 0
        while not self._stop.is_set():
            try:
                producer.produce(TOPIC, b"value-%08d" % number, partition=number % PARTITIONS, on_delivery=delivered)
                number += 1
            except BufferError:
                pass
            producer.poll(0.002)
        if producer.flush(60) != 0:
            self.failed.append("undelivered at the end")

    def _consume(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "unused", "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        try:
            while not self._produced.is_set() or (len(self.consumed) < len(self.acknowledged)
                                                  and time.monotonic() < self._stopped_at + 90):
                for message in consumer.consume(num_messages=1000, timeout=0.2):
                    if message.error() is None:
                        self.consumed[(message.partition(), message.offset())] = message.value()
                    elif message.error().fatal():
                        raise KafkaException(message.error())
        finally:
            consumer.close()

    def wait_for(self, count: int, what: str) -> None:
        wait_until(lambda: len(self.acknowledged) >= count, 60, what)

    def stop(self) -> None:
        """The producer flushed, then the consumer caught up (90 s at most): it may have read records
        whose answers were still on their way, so it stops comparing counts only once all came."""
        self._stop.set()
        producing, consuming = self._threads
        producing.join(120)
        self._stopped_at = time.monotonic()
        self._produced.set()
        consuming.join(120)

    def check(self) -> None:
        assert not self.failed, f"{len(self.failed)} failed deliveries, e.g. {self.failed[:3]}"
        copies = Counter(self.consumed.values())
        assert not set(self.acknowledged) - set(copies), "acknowledged records lost"
        assert [value for value, count in copies.items() if count > 1] == [], "records written twice"


def preferred_leaders_lead(gateway, nodes=(1, 2, 3)) -> bool:
    """Every partition of the topic is led by its preferred leader, and those are spread over `nodes`."""
    partitions = metadata(gateway, TOPIC).topics[TOPIC].partitions.values()
    return (len(partitions) == PARTITIONS and all(p.replicas[:1] == [p.leader] for p in partitions)
            and {p.leader for p in partitions} == set(nodes))


def stop_gently(gateway) -> float:
    """SIGTERM; the seconds until it exited (with 0, after its controlled shutdown)."""
    began = time.monotonic()
    assert gateway.stop() == 0
    assert "controlled_shutdown_done" in gateway.log_path.read_text()
    return time.monotonic() - began


def test_sigterm_of_a_leader_hands_its_partitions_over_without_a_failed_delivery(tmp_path):
    """The last gateway has nobody to hand over to: it just stops."""
    with gateway_cluster(tmp_path) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        traffic = Traffic(gateways)
        try:
            traffic.wait_for(1000, "records acknowledged before the SIGTERM")
            took = stop_gently(gateways[2])
            assert spread_over(gateways[0], TOPIC, {1, 2})
            traffic.wait_for(len(traffic.acknowledged) + 1000, "produce goes on after the SIGTERM")
        finally:
            traffic.stop()
        traffic.check()
        assert took < 10
        stop_gently(gateways[1])
        assert stop_gently(gateways[0]) < 5, "the last gateway waited for nobody"


def test_a_rolling_restart_fails_no_request_and_gives_each_gateway_its_partitions_back(tmp_path):
    """Each gateway, the controller first, stops by SIGTERM and starts again; the controller's auto
    rebalance (checked every second here) moves its preferred partitions back to it before the next."""
    with gateway_cluster(tmp_path, 3, *FAST_REBALANCE) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: preferred_leaders_lead(gateways[0]), 30, "partitions led by their preferred leaders")
        commit_offset(gateways[1], 7)  # in __consumer_offsets: its partition (the coordinator) is handed over too
        traffic = Traffic(gateways)
        try:
            traffic.wait_for(500, "records acknowledged before the restarts")
            for node, gateway in enumerate(gateways, 1):
                stop_gently(gateway)
                others = [g for g in gateways if g is not gateway]
                assert node not in {p.leader for p in metadata(others[0], TOPIC).topics[TOPIC].partitions.values()}
                gateway.start()
                wait_until(lambda asked=others[0]: preferred_leaders_lead(asked), 30,
                           f"gateway {node} leads its preferred partitions again")
                traffic.wait_for(len(traffic.acknowledged) + 300, f"produce goes on after gateway {node} restarted")
        finally:
            traffic.stop()
        traffic.check()
        assert committed_offset(gateways[2]) == 7
        assert not re.search(r"partition_leader_assigned.* leader=1 .*previous=1 ", gateways[0].log_path.read_text()), \
            "the stopping controller gave a partition to itself again"


def commit_offset(gateway, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "rolled", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def committed_offset(gateway) -> int:
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "rolled"})
    try:
        return consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)[0].offset
    finally:
        consumer.close()


def test_elect_leaders_and_reassignments_move_leadership_to_the_preferred_gateway(tmp_path):
    """Without the auto rebalance a restarted gateway leads nothing until ElectLeaders PREFERRED
    moves its partitions back; a reassignment makes another gateway the preferred leader."""
    with gateway_cluster(tmp_path, 3, "--auto-leader-rebalance-enable", "false") as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: preferred_leaders_lead(gateways[0]), 30, "partitions led by their preferred leaders")
        partitions = metadata(gateways[0], TOPIC).topics[TOPIC].partitions
        number = next(n for n, p in partitions.items() if p.leader == 3)
        everywhere = AdminClient({"bootstrap.servers": gateways[1].bootstrap})
        assert everywhere.elect_leaders(ConfluentElection.PREFERRED).result(30) == {}, "none was needed"
        admin = KafkaAdminClient(bootstrap_servers=gateways[0].bootstrap)
        try:
            def elected(election: int) -> int:
                results = admin.elect_leaders(election, {TOPIC: [number]}, raise_errors=False)
                return results.replica_election_results[0].partition_result[0].error_code

            assert elected(ElectionType.PREFERRED) == ErrorCode.ELECTION_NOT_NEEDED
            stop_gently(gateways[2])
            assert elected(ElectionType.PREFERRED) == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            assert elected(ElectionType.UNCLEAN) == ErrorCode.ELECTION_NOT_NEEDED
            gateways[2].start()
            wait_until(lambda: 3 in metadata(gateways[0]).brokers, 30, "gateway 3 is back")
            assert leader_of(gateways[0], number) != 3, "nothing moved back without an election"
            assert elected(ElectionType.PREFERRED) == ErrorCode.NONE
            wait_until(lambda: leader_of(gateways[0], number) == 3, 30, "the partition moved back")
            produce, consume = CLIENTS["confluent-kafka"]
            assert produce(gateways[0].bootstrap, TOPIC, [Sent(value=b"back", partition=number)]) == [0]

            target = KafkaTopicPartition(TOPIC, number)
            assert admin.alter_partition_reassignments({target: [2, 3, 1]}) == {target: None}
            assert replicas_of(gateways[1], number) == [2, 3, 1]
            assert leader_of(gateways[0], number) == 3, "the leader is still a replica: it stays"
            assert admin.list_partition_reassignments() == {}
            assert elected(ElectionType.PREFERRED) == ErrorCode.NONE
            wait_until(lambda: leader_of(gateways[0], number) == 2, 30, "moved to the new preferred leader")
            assert admin.alter_partition_reassignments({target: [1]}) == {target: None}
            wait_until(lambda: leader_of(gateways[0], number) == 1, 30, "moved to its only replica")
            assert produce(gateways[0].bootstrap, TOPIC, [Sent(value=b"moved", partition=number)]) == [1]
            assert [g.value for g in consume(gateways[2].bootstrap, TOPIC, [number], 2)] == [b"back", b"moved"]
        finally:
            admin.close()


def leader_of(gateway, number: int) -> int:
    return metadata(gateway, TOPIC).topics[TOPIC].partitions[number].leader


def replicas_of(gateway, number: int) -> list[int]:
    return list(metadata(gateway, TOPIC).topics[TOPIC].partitions[number].replicas)



def test_a_gateway_that_joins_gets_its_share_of_leadership(tmp_path):
    """A third gateway joins two: it becomes the preferred leader of a third of the partitions,
    which the auto rebalance moves to it."""
    with gateway_cluster(tmp_path, 2, *FAST_REBALANCE) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: preferred_leaders_lead(gateways[0], (1, 2)), 30, "partitions led by their preferred")
        options = list(gateways[1].options)
        options[options.index("--node-id") + 1] = "3"
        joining = GatewayProcess(tmp_path / "gateway-3", *options, stores=0)
        joining.tower_sub, joining.tower_pub = gateways[1].tower_sub, gateways[1].tower_pub
        gateways.append(joining.start())  # stopped with the others
        wait_until(lambda: preferred_leaders_lead(gateways[0]), 30, "gateway 3 leads the partitions it prefers")
        partitions = metadata(gateways[2], TOPIC).topics[TOPIC].partitions.values()
        assert Counter(p.leader for p in partitions) == Counter({1: 2, 2: 2, 3: 2})
        assert all(sorted(p.replicas) == [1, 2, 3] for p in partitions)
        produce, consume = CLIENTS["confluent-kafka"]
        sent = [Sent(value=b"%d" % n, partition=n) for n in range(PARTITIONS)]
        produce(gateways[0].bootstrap, TOPIC, sent, acks="all")
        assert sorted(g.value for g in consume(joining.bootstrap, TOPIC, list(range(PARTITIONS)), 6)) == sorted(
            s.value for s in sent)


def test_a_controlled_shutdown_is_bounded_by_its_settings_and_a_second_sigterm(tmp_path):
    """With the controller paused nothing moves: a gateway stops after its attempts anyway
    (2 x 1 s here), another (which would wait 3 x 60 s) at once at a second SIGTERM; the
    controller, woken, moves their partitions to itself and nothing acknowledged is lost."""
    produce, consume = CLIENTS["confluent-kafka"]

    def bounded(gateway):
        backoff = "60000" if gateway.data_dir.name == "gateway-3" else "1000"
        retries = "3" if gateway.data_dir.name == "gateway-3" else "2"
        gateway.options += ("--controlled-shutdown-max-retries", retries,
                            "--controlled-shutdown-retry-backoff-ms", backoff)

    with gateway_cluster(tmp_path, 3, prepare=bounded, session_timeout_ms=60000) as gateways:
        create_topic_through(gateways[0], TOPIC)
        wait_until(lambda: spread_over(gateways[0], TOPIC, {1, 2, 3}), 30, "partitions led by all three")
        sent = [Sent(value=b"%d" % n, partition=n) for n in range(PARTITIONS)]
        produce(gateways[0].bootstrap, TOPIC, sent, acks="all")
        controller, patient, impatient = gateways
        controller.process.send_signal(signal.SIGSTOP)
        try:
            began = time.monotonic()
            assert patient.stop() == 0
            assert 2 <= time.monotonic() - began < 10
            assert patient.log_path.read_text().count("controlled_shutdown_attempt_failed") == 2
            os.killpg(impatient.process.pid, signal.SIGTERM)
            wait_until(lambda: "shutdown_requested" in impatient.log_path.read_text(), 10, "the first SIGTERM taken")
            began = time.monotonic()
            os.killpg(impatient.process.pid, signal.SIGTERM)
            impatient.process.wait(10)
            assert time.monotonic() - began < 10
        finally:
            controller.process.send_signal(signal.SIGCONT)
        wait_until(lambda: spread_over(controller, TOPIC, {1}), 30, "the controller leads every partition")
        assert sorted(g.value for g in consume(controller.bootstrap, TOPIC, list(range(PARTITIONS)), 6)) == sorted(
            s.value for s in sent)
