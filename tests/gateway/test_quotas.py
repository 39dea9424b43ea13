"""Client quotas (KIP-546 and Kafka's byte-rate quotas) against the real gateway.

The quotas are set and read with kafka-python's own AlterClientQuotas and
DescribeClientQuotas messages; throttling is seen by confluent-kafka clients
(librdkafka reports each throttled response to `throttle_cb`). Time bounds
are lower bounds only, which throttling guarantees however loaded the machine.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.topics import CreateTopicsRequest

from tests.gateway.admin import create_topic
from tests.gateway.server import GatewayProcess

INVALID_REQUEST = 42
THROTTLING_QUOTA_EXCEEDED = 89
EXACT, DEFAULT, ANY = 0, 1, 2
Entry = AlterClientQuotasRequest.EntryData
TIMEOUT_S = 30.0

# Two one-second samples: a rate is measured over at least one second, so that a
# megabyte at 200 KB/s takes about four seconds, not the fifty of Kafka's eleven.
SHORT_WINDOWS = ("--quota-window-num", "2", "--quota-window-size-seconds", "1")
RATE = 200 * 1024
VALUE = b"x" * 10_000
MESSAGES = 100  # a megabyte: at RATE, about 4 s beyond the first second's allowance
AT_LEAST_S = 2.0


def entity(**names) -> list:
    return [Entry.EntityData(entity_type=t.replace("_", "-"), entity_name=n) for t, n in names.items()]


def op(key: str, value: float = 0.0, remove: bool = False):
    return Entry.OpData(key=key, value=value, remove=remove)


class QuotaAdmin:
    def __init__(self, bootstrap: str, client_id: str = "quota-admin"):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)

    def send(self, request, node_id: int | None = None):
        """The response of the gateway `node_id` (of the least loaded one if None)."""
        return self.admin._manager.run(self.admin._manager.send, request, node_id)

    def alter(self, *entries: tuple[list, list], validate_only: bool = False,
              node_id: int | None = None) -> list[tuple[int, str | None]]:
        response = self.send(AlterClientQuotasRequest(
            entries=[Entry(entity=e, ops=ops) for e, ops in entries], validate_only=validate_only), node_id)
        return [(r.error_code, r.error_message) for r in response.entries]

    def describe(self, *components: tuple[str, int, str | None], strict: bool = False, node_id: int | None = None):
        """{entity as ((type, name), ...): {key: value}}, or (error code, message)."""
        component = DescribeClientQuotasRequest.ComponentData
        response = self.send(DescribeClientQuotasRequest(
            components=[component(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict),
            node_id)
        if response.error_code:
            return response.error_code, response.error_message
        return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
                for entry in response.entries}

    def create_topic(self, name: str, partitions: int, version: int | None = None):
        """The CreateTopics response (of the newest version both sides know, unless told)."""
        wanted = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                                    assignments=[], configs=[])
        return self.send(CreateTopicsRequest(topics=[wanted], timeout_ms=30000, validate_only=False,
                                             version=version))

    def close(self):
        self.admin.close()


@pytest.fixture
def quota_admin(shared_gateway):
    """An admin client; the shared gateway is left with no quota after each test."""
    admin = QuotaAdmin(shared_gateway.bootstrap)
    yield admin
    left = admin.describe()
    admin.alter(*[([Entry.EntityData(entity_type=t, entity_name=n) for t, n in names],
                   [op(key, remove=True) for key in values]) for names, values in left.items()])
    admin.close()


def test_alter_and_describe_with_filters(quota_admin):
    assert quota_admin.alter(
        (entity(user="alice"), [op("producer_byte_rate", 1000), op("request_percentage", 12.5)]),
        (entity(user="alice", client_id="app"), [op("consumer_byte_rate", 2000)]),
        (entity(user=None), [op("controller_mutation_rate", 5)]),
        (entity(client_id=None), [op("producer_byte_rate", 3000)]),
        (entity(ip="10.0.0.1"), [op("connection_creation_rate", 7)]),
    ) == [(0, None)] * 5
    alice, alice_app = (("user", "alice"),), (("client-id", "app"), ("user", "alice"))
    everything = quota_admin.describe()
    assert everything == {
        alice: {"producer_byte_rate": 1000, "request_percentage": 12.5},
        alice_app: {"consumer_byte_rate": 2000},
        (("user", None),): {"controller_mutation_rate": 5},
        (("client-id", None),): {"producer_byte_rate": 3000},
        (("ip", "10.0.0.1"),): {"connection_creation_rate": 7},
    }
    assert quota_admin.describe(("user", EXACT, "alice")).keys() == {alice, alice_app}
    assert quota_admin.describe(("user", EXACT, "alice"), strict=True).keys() == {alice}
    assert quota_admin.describe(("user", DEFAULT, None)).keys() == {(("user", None),)}
    assert quota_admin.describe(("user", ANY, None)).keys() == {alice, alice_app, (("user", None),)}
    assert quota_admin.describe(("user", ANY, None), ("client-id", ANY, None)).keys() == {alice_app}
    assert quota_admin.describe(("client-id", DEFAULT, None), strict=True).keys() == {(("client-id", None),)}
    assert quota_admin.describe(("ip", EXACT, "10.0.0.1")).keys() == {(("ip", "10.0.0.1"),)}

    # validate_only changes nothing; a removal takes the key, the last one the entity
    assert quota_admin.alter((entity(user="bob"), [op("producer_byte_rate", 1)]), validate_only=True) == [(0, None)]
    assert quota_admin.alter((entity(user="alice"), [op("request_percentage", remove=True)]),
                             (entity(ip="10.0.0.1"), [op("connection_creation_rate", remove=True)])) == [(0, None)] * 2
    after = quota_admin.describe()
    assert after[alice] == {"producer_byte_rate": 1000}
    assert (("user", "bob"),) not in after and (("ip", "10.0.0.1"),) not in after


@pytest.mark.parametrize(("names", "ops", "message"), [
    ({"user": "u"}, [op("bogus", 1)], "Invalid configuration key bogus"),
    ({"ip": None}, [op("producer_byte_rate", 1)], "Invalid configuration key producer_byte_rate"),
    ({"user": "u"}, [op("connection_creation_rate", 1)], "Invalid configuration key connection_creation_rate"),
    ({"user": "u"}, [op("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ({"user": "u", "ip": "1.2.3.4"}, [op("producer_byte_rate", 1)],
     "Invalid quota entity combination, IP quota should not be combined with User or ClientId"),
    ({"group": "g"}, [op("producer_byte_rate", 1)], "Unhandled client quota entity type: group"),
    ({}, [op("producer_byte_rate", 1)], "Invalid empty client quota entity"),
])
def test_invalid_alterations_are_refused_each_on_its_own(quota_admin, names, ops, message):
    results = quota_admin.alter((entity(**names), ops), (entity(user="valid-neighbour"), [op("request_percentage", 1)]))
    assert results == [(INVALID_REQUEST, message), (0, None)]


def test_invalid_describe_filters(quota_admin):
    assert quota_admin.describe(("user", EXACT, None))[0] == INVALID_REQUEST
    assert quota_admin.describe(("user", ANY, None), ("user", EXACT, "a"))[0] == INVALID_REQUEST
    assert quota_admin.describe(("ip", ANY, None), ("user", ANY, None))[0] == INVALID_REQUEST


def test_quotas_survive_a_restart(gateway):
    admin = QuotaAdmin(gateway.bootstrap)
    try:
        admin.alter((entity(client_id="kept"), [op("producer_byte_rate", 4096)]),
                    (entity(user=None, client_id=None), [op("consumer_byte_rate", 8192)]))
        admin.alter((entity(client_id="kept"), [op("consumer_byte_rate", 1024)]))
    finally:
        admin.close()
    gateway.kill()
    gateway.start()
    admin = QuotaAdmin(gateway.bootstrap)
    try:
        assert admin.describe() == {
            (("client-id", "kept"),): {"producer_byte_rate": 4096, "consumer_byte_rate": 1024},
            (("client-id", None), ("user", None)): {"consumer_byte_rate": 8192},
        }
    finally:
        admin.close()


@pytest.fixture
def windowed_gateway(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", *SHORT_WINDOWS).start()
    yield server
    server.stop()


def produce(bootstrap: str, topic: str, client_id: str) -> tuple[float, list[float]]:
    """Seconds to produce MESSAGES values as `client_id`, and the throttle times reported."""
    throttles: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "batch.size": 2 * len(VALUE),
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    started = time.monotonic()
    for _ in range(MESSAGES):
        producer.produce(topic, VALUE)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S * 3) == 0
    return time.monotonic() - started, throttles


def consume(bootstrap: str, topic: str, client_id: str) -> tuple[float, list[float]]:
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
                         "enable.auto.commit": False,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        started, got = time.monotonic(), 0
        deadline = started + TIMEOUT_S * 3
        while got < MESSAGES and time.monotonic() < deadline:
            got += sum(1 for m in consumer.consume(MESSAGES, 1.0) if m.error() is None)
        assert got == MESSAGES
        return time.monotonic() - started, throttles
    finally:
        consumer.close()


def only_slow_throttled(run, bootstrap: str, topic: str, *, free: str, slow: str) -> None:
    free_seconds, free_throttles = run(bootstrap, topic, free)
    slow_seconds, slow_throttles = run(bootstrap, topic, slow)
    assert free_throttles == []
    assert slow_throttles and max(slow_throttles) > 0
    assert slow_seconds >= AT_LEAST_S, (slow_seconds, free_seconds)


def test_producer_byte_rate_throttles_only_its_client(windowed_gateway):
    bootstrap = windowed_gateway.bootstrap
    create_topic(bootstrap, "produced")
    admin = QuotaAdmin(bootstrap)
    try:
        assert admin.alter((entity(client_id="slow-writer"), [op("producer_byte_rate", RATE)])) == [(0, None)]
    finally:
        admin.close()
    only_slow_throttled(produce, bootstrap, "produced", free="free-writer", slow="slow-writer")


def test_consumer_byte_rate_throttles_only_its_client(windowed_gateway):
    bootstrap = windowed_gateway.bootstrap
    create_topic(bootstrap, "consumed")
    produce(bootstrap, "consumed", "writer")
    admin = QuotaAdmin(bootstrap)
    try:  # the default client's quota applies to every client id without one of its own
        assert admin.alter((entity(client_id=None), [op("consumer_byte_rate", RATE)]),
                           (entity(client_id="free-reader"), [op("consumer_byte_rate", 1e12)])) == [(0, None)] * 2
    finally:
        admin.close()
    only_slow_throttled(consume, bootstrap, "consumed", free="free-reader", slow="slow-reader")


def test_request_percentage_throttles_a_busy_client(shared_gateway, quota_admin):
    throttles: list[float] = []
    busy = AdminClient({"bootstrap.servers": shared_gateway.bootstrap, "client.id": "busy-client",
                        "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    busy.list_topics(timeout=TIMEOUT_S)
    # a thousandth of a percent: the first request of a millisecond or less puts the client over it
    assert quota_admin.alter((entity(client_id="busy-client"), [op("request_percentage", 1e-3)])) == [(0, None)]
    deadline = time.monotonic() + TIMEOUT_S
    while not throttles and time.monotonic() < deadline:
        try:
            busy.list_topics(timeout=1)
        except KafkaException:  # queued behind a request whose throttle time is not over
            pass
        busy.poll(0.1)
    assert throttles and max(throttles) > 0
    assert quota_admin.send(DescribeClientQuotasRequest(components=[], strict=False)).throttle_time_ms == 0


def test_controller_mutation_rate_is_strict_from_create_topics_v6(shared_gateway, quota_admin):
    # one partition a second: the bucket holds 11 (Kafka's eleven one-second windows)
    assert quota_admin.alter((entity(client_id="mutator"), [op("controller_mutation_rate", 1)])) == [(0, None)]
    mutator = QuotaAdmin(shared_gateway.bootstrap, "mutator")
    try:
        first = mutator.create_topic("mutated-1", 20)  # allowed while the bucket is not empty
        assert (first.topics[0].error_code, first.throttle_time_ms) == (0, 0)
        second = mutator.create_topic("mutated-2", 1)
        assert second.topics[0].error_code == THROTTLING_QUOTA_EXCEEDED
        assert second.throttle_time_ms > 0
    finally:
        mutator.close()
    other = quota_admin.create_topic("mutated-3", 20)
    assert (other.topics[0].error_code, other.throttle_time_ms) == (0, 0)


def test_controller_mutation_rate_is_permissive_before_create_topics_v6(shared_gateway, quota_admin):
    assert quota_admin.alter((entity(client_id="old-mutator"), [op("controller_mutation_rate", 1)])) == [(0, None)]
    mutator = QuotaAdmin(shared_gateway.bootstrap, "old-mutator")
    try:  # 20 partitions from a bucket of 11: done, and 9 s to wait
        created = mutator.create_topic("old-mutated", 20, version=5)
        assert (created.version, created.topics[0].error_code) == (5, 0)
        assert created.throttle_time_ms > 0
    finally:
        mutator.close()
