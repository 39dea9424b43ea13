"""acks and min.insync.replicas as Kafka honours them, against the real gateway and stores.

acks=1 is answered once one store holds the batch, acks=all once
min.insync.replicas stores do; the high watermark follows the live stores, so a
single store behaves as Kafka's single replica; with too few live stores acks=all
is refused at once and nothing of it is published; the gateway starts once
min.insync.replicas stores answer.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import (
    KafkaTimeoutError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    RequestTimedOutError,
)

from protocol.kafka import decode_response
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Record, build_batch
from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.server import GatewayProcess, children
from tests.gateway.test_http_endpoint import get, sample
from tests.gateway.test_produce_errors import wire_answer
from tests.mesh.conftest import fast_config, free_port
from tests.mesh.processes import NodeProcess

STARTED = "event='node_started'"
PRODUCE = by_name("Produce")


def test_acks_1_waits_for_a_store(gateway):
    """The store frozen, an acks=1 produce is not answered as written; thawed, it is."""
    (store,) = children(gateway.process.pid)
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks=1, linger_ms=0)
    hasty = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks=1, retries=0, linger_ms=0,
                          request_timeout_ms=1000)
    try:
        assert producer.send("held", b"first").get(30).offset == 0
        os.kill(store, signal.SIGSTOP)
        with pytest.raises((RequestTimedOutError, KafkaTimeoutError)):
            hasty.send("held", b"unheld").get(30)
        os.kill(store, signal.SIGCONT)
        assert producer.send("held", b"after").get(30).offset >= 1
    finally:
        os.kill(store, signal.SIGCONT)
        producer.close(5)
        hasty.close(5)


def test_acks_1_is_visible_at_once_to_list_offsets_and_delete_records(gateway):
    """One store, as Kafka with one replica: the answer to an acks=1 produce means the
    records are below the high watermark, for ListOffsets latest and DeleteRecords."""
    create_topic(gateway.bootstrap, "visible")
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks=1, linger_ms=0)
    consumer = KafkaConsumer(bootstrap_servers=gateway.bootstrap, enable_auto_commit=False)
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    partition = TopicPartition("visible", 0)
    try:
        for n in range(200):
            offset = producer.send("visible", b"%d" % n, partition=0).get(30).offset
            assert offset == n
            assert consumer.end_offsets([partition])[partition] == n + 1
            if n % 2:  # every other one, so that ListOffsets also sees a log start below the end
                (deleted,) = admin.delete_records([ConfluentPartition("visible", 0, n + 1)]).values()
                assert deleted.result(30).low_watermark == n + 1
    finally:
        producer.close(5)
        consumer.close()


@contextmanager
def external_mesh(tmp_path, server: GatewayProcess, stores: int):
    """A tower and `stores` stores as processes, on the gateway's tower addresses; yields
    (config, stores) and stops every node, even those a test restarted (in the list)."""
    config = fast_config(beacon_sub_address=(f"tcp://127.0.0.1:{server.tower_sub}",),
                         beacon_pub_address=(f"tcp://127.0.0.1:{server.tower_pub}",),
                         tower_sub_address=f"tcp://127.0.0.1:{server.tower_sub}",
                         tower_pub_address=f"tcp://127.0.0.1:{server.tower_pub}")
    tower = NodeProcess.tower(config, tmp_path / "tower.log")
    nodes = []
    try:
        tower.wait_for_log("event='tower_started'")
        nodes += [start_store(config, tmp_path, name) for name in "ab"[:stores]]
        yield config, nodes
    finally:
        server.stop()
        for node in [*nodes, tower]:
            node.stop()


def start_store(config, tmp_path, name: str, prefix: Sequence[str] = ()) -> NodeProcess:
    store = NodeProcess.store(config, tmp_path / f"store-{name}", tmp_path / f"store-{name}.log", prefix)
    store.wait_for_log(STARTED, count=2)  # writer and reader
    return store


def live_stores_logged(server: GatewayProcess, live: int) -> bool:
    return f"event='live_stores_changed' live={live}" in server.log_path.read_text()


def test_too_few_live_stores_refuse_acks_all_at_once_and_publish_nothing(tmp_path):
    """Two stores, min.insync.replicas=2: one killed, acks=all gets NOT_ENOUGH_REPLICAS well
    within the request timeout while acks=1 and acks=0 go on; the store back, acks=all works
    again, and what was refused never reaches a consumer."""
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "2", "--expected-stores", "2",
                            stores=0)
    with external_mesh(tmp_path, server, stores=2) as (config, stores):
        server.start()
        create_topic(server.bootstrap, "guarded")
        before = [Sent(value=b"before%d" % n) for n in range(10)]
        assert confluent_produce(server.bootstrap, "guarded", before, acks="all") == list(range(10))
        stores[1].stop(signal.SIGKILL)
        wait_until(lambda: live_stores_logged(server, 1), 30, "the gateway saw the store go")
        producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all", retries=0, linger_ms=0,
                                 request_timeout_ms=30000)
        try:
            for n in range(5):
                started = time.monotonic()
                with pytest.raises(NotEnoughReplicasError):
                    producer.send("guarded", b"refused%d" % n).get(60)
                assert time.monotonic() - started < 10, "refused only after a wait"
        finally:
            producer.close(5)
        single = [Sent(value=b"acks1-%d" % n) for n in range(5)]
        assert confluent_produce(server.bootstrap, "guarded", single, acks=1) == list(range(10, 15))
        unanswered = [Sent(value=b"acks0-%d" % n) for n in range(5)]
        confluent_produce(server.bootstrap, "guarded", unanswered, acks=0)
        stores[1] = start_store(config, tmp_path, "b")
        wait_until(lambda: live_stores_logged(server, 2), 30, "the gateway saw the store return")
        after = [Sent(value=b"after%d" % n) for n in range(10)]
        assert confluent_produce(server.bootstrap, "guarded", after, acks="all",
                                 **{"message.timeout.ms": 30000}) == list(range(20, 30))
        expected = [s.value for s in before + single + unanswered + after]
        assert [g.value for g in confluent_consume(server.bootstrap, "guarded", [0], len(expected))] == expected


def test_the_gateway_serves_once_min_insync_stores_answer(tmp_path):
    """Two stores expected, one running, min.insync.replicas=1: the gateway does not wait for
    the other beyond expected.stores.wait.ms, and takes acks=all produce."""
    server = GatewayProcess(tmp_path / "gateway", "--expected-stores", "2", "--expected-stores-wait-ms", "500",
                            stores=0)
    with external_mesh(tmp_path, server, stores=1):
        server.start()
        sent = [Sent(value=b"%d" % n) for n in range(10)]
        assert confluent_produce(server.bootstrap, "started", sent, acks="all") == list(range(10))
        assert "event='serving_without_all_stores'" in server.log_path.read_text()


def test_two_stores_in_the_gateways_process_both_count_for_acks_all(tmp_path):
    """min.insync.replicas=2 with both embedded stores in the gateway's process: the producer
    pairs over inproc with one store's writer and hears the other over TCP, and each one's
    ACKs count for that store, so acks=all is answered; all of it is there after a restart."""
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "2", "--embedded-stores-in-process",
                            "true", stores=2).start()
    try:
        sent = [Sent(value=b"%d" % n) for n in range(20)]
        assert confluent_produce(server.bootstrap, "paired", sent, acks="all") == list(range(20))
        assert "event='peer_linked_inproc' node='producer'" in server.log_path.read_text()
        server.stop()
        server.start()
        assert [got.value for got in confluent_consume(server.bootstrap, "paired", [0], 20)] == [
            record.value for record in sent]
    finally:
        server.stop()


def test_a_store_that_falls_behind_leaves_the_in_sync_stores(tmp_path):
    """Two stores, min.insync.replicas=2: one frozen (connected but taking nothing) is out of
    sync after replica.lag.time.max.ms: acks=all gets NOT_ENOUGH_REPLICAS, acks=1 records
    are visible at once; thawed, it catches up and acks=all works again."""
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "2", "--replica-lag-time-max-ms", "1000",
                            stores=2).start()
    stores = children(server.process.pid)
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all", retries=0, linger_ms=0,
                             request_timeout_ms=1000)
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
    partition = TopicPartition("lagging", 0)
    try:
        assert producer.send("lagging", b"both", partition=0).get(30).offset == 0
        os.kill(stores[1], signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while True:  # what is sent before the store counts as behind waits for it and times out
            assert time.monotonic() < deadline, "acks=all was never refused"
            try:
                producer.send("lagging", b"refused?", partition=0).get(30)
            except (RequestTimedOutError, KafkaTimeoutError, NotEnoughReplicasAfterAppendError):
                continue  # sent before the store counted as behind: timed out, or answered once it did
            except NotEnoughReplicasError:
                break
        single = KafkaProducer(bootstrap_servers=server.bootstrap, acks=1, linger_ms=0)
        try:
            offset = single.send("lagging", b"one store", partition=0).get(30).offset
            assert consumer.end_offsets([partition])[partition] == offset + 1
        finally:
            single.close(5)
        os.kill(stores[1], signal.SIGCONT)
        sent = [Sent(value=b"after%d" % n) for n in range(5)]
        assert len(confluent_produce(server.bootstrap, "lagging", sent, acks="all",
                                     **{"message.timeout.ms": 30000})) == 5
    finally:
        for pid in stores:
            os.kill(pid, signal.SIGCONT)
        producer.close(5)
        consumer.close()
        server.stop()


def records_in(http: int, topic: str) -> float:
    metrics = get(http, "/metrics")[1]
    return sample(metrics, f'dafka_gateway_records_in_total{{topic="{topic}"}}') if topic in metrics else 0


def raw_produce(topic: str, value: bytes):
    """An acks=all Produce of one record to the topic's partition 0."""
    Data = PRODUCE.Request.TopicData
    records = build_batch([Record(0, int(time.time() * 1000), None, value)])
    return PRODUCE.Request(acks=-1, timeout_ms=30000, topic_data=[
        Data(name=topic, partition_data=[Data.PartitionData(index=0, records=records)])])


def test_a_store_killed_under_waiting_acks_all_produce_answers_it_at_once(tmp_path):
    """Two stores, min.insync.replicas=2, one frozen so that acks=all produce waits for it: once
    it is killed, the waiting requests get NOT_ENOUGH_REPLICAS_AFTER_APPEND well within their
    timeout; an idempotent producer retries until the store is back, and every record is
    stored exactly once. The answers keep the batches' offsets, with no message."""
    http = free_port()
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "2", "--expected-stores", "2",
                            "--http-port", str(http), stores=0)
    with external_mesh(tmp_path, server, stores=2) as (config, stores):
        server.start()
        create_topic(server.bootstrap, "waiting")
        idempotent = Producer({"bootstrap.servers": server.bootstrap, "enable.idempotence": True,
                               "linger.ms": 0, "message.timeout.ms": 60000})
        errors = []
        idempotent.produce("waiting", b"first", on_delivery=lambda error, _: errors.append(error))
        assert idempotent.flush(30) == 0  # and it has its producer id: nothing more to wait for
        producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all", retries=0, linger_ms=0,
                                 request_timeout_ms=30000, max_block_ms=30000)
        raw = {version: RawConnection(server.port) for version in (8, 9)}
        try:
            stores[1].process.send_signal(signal.SIGSTOP)
            futures = [producer.send("waiting", b"waits%d" % n) for n in range(3)]
            for n in range(3):
                idempotent.produce("waiting", b"idempotent%d" % n, on_delivery=lambda error, _: errors.append(error))
            for version, connection in raw.items():
                connection.send(PRODUCE, version, raw_produce("waiting", b"raw%d" % version))
            wait_until(lambda: records_in(http, "waiting") >= 9, 30, "the gateway appended the batches")
            killed = time.monotonic()
            stores[1].stop(signal.SIGKILL)
            for future in futures:
                with pytest.raises(NotEnoughReplicasAfterAppendError):
                    future.get(60)
            for version, connection in raw.items():  # as Kafka's DelayedProduce: the append's offsets stay
                frame = connection.receive_frame()
                (answer,) = decode_response(PRODUCE.key, version, frame)[1].responses[0].partition_responses
                assert 1 <= answer.base_offset <= 8
                assert wire_answer(version, 0, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, answer.base_offset,
                                   0) in frame
            assert time.monotonic() - killed < 10, "answered only after a wait"
        finally:
            producer.close(5)
            for connection in raw.values():
                connection.close()
        stores[1] = start_store(config, tmp_path, "b")
        assert idempotent.flush(60) == 0 and errors == [None] * 4  # retried until the store was back
        sent = [b"first", *(b"waits%d" % n for n in range(3)), *(b"idempotent%d" % n for n in range(3)),
                *(b"raw%d" % version for version in raw)]
        got = [g.value for g in confluent_consume(server.bootstrap, "waiting", [0], len(sent))]
        assert sorted(got) == sorted(sent)  # each once: the failed batches became durable later
        assert confluent_produce(server.bootstrap, "waiting", [Sent(value=b"after")], acks="all") == [len(sent)]
        assert "event='produce_not_durable'" in server.log_path.read_text()
