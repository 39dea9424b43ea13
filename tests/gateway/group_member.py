"""One consumer-group member as its own process, so that a test can kill it.

    python -m tests.gateway.group_member CLIENT BOOTSTRAP TOPIC GROUP [INSTANCE_ID] [ASSIGNOR]

CLIENT is kafka-python, confluent-kafka, aiokafka or confluent-consumer-protocol
(confluent-kafka with group.protocol=consumer, KIP-848; ASSIGNOR is then its
group.remote.assignor). The member subscribes, commits after processing each poll and
writes one JSON line per event: {"subscribing": true} as it creates the
consumer, {"assigned": [partitions]} whenever its
assignment changes, {"record": [partition, offset, value]} per record and
{"committed": true} once the records before it are committed.
SIGTERM makes it close (leave the group) and exit.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import signal
import sys

SESSION_TIMEOUT_MS = 6000
# A static member's session outlasts its restart (KIP-345's premise), however loaded the machine.
STATIC_SESSION_TIMEOUT_MS = 30000
HEARTBEAT_MS = 500
stopping = False


def say(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def session_timeout_ms(instance: str | None) -> int:
    return SESSION_TIMEOUT_MS if instance is None else STATIC_SESSION_TIMEOUT_MS


def run_kafka_python(bootstrap, topic, group, instance, assignor):
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    strategy = CooperativeStickyAssignor if assignor == "cooperative-sticky" else RangePartitionAssignor
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=session_timeout_ms(instance), heartbeat_interval_ms=HEARTBEAT_MS,
                             partition_assignment_strategy=[strategy])
    assigned = None
    while not stopping:
        for messages in consumer.poll(timeout_ms=100).values():
            for m in messages:
                say(record=[m.partition, m.offset, m.value.decode()])
            consumer.commit()
            say(committed=True)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != assigned:
            assigned = now
            say(assigned=now)
    consumer.close()


def run_confluent(bootstrap, topic, group, instance, assignor):
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "session.timeout.ms": session_timeout_ms(instance),
              "heartbeat.interval.ms": HEARTBEAT_MS, "partition.assignment.strategy": assignor or "range"}
    if instance:
        config["group.instance.id"] = instance
    consume_and_commit(config, topic)


def consume_and_commit(config: dict, topic: str) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(config)
    consumer.subscribe([topic])
    assigned = None
    while not stopping:
        messages = consumer.consume(num_messages=500, timeout=0.1)
        for m in messages:
            if m.error() is None:
                say(record=[m.partition(), m.offset(), m.value().decode()])
        if any(m.error() is None for m in messages):
            consumer.commit(asynchronous=False)
            say(committed=True)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != assigned:
            assigned = now
            say(assigned=now)
    consumer.close()


def run_confluent_consumer_protocol(bootstrap, topic, group, instance, assignor):
    """KIP-848: the coordinator assigns; session and heartbeat timing are the broker's."""
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if assignor:
        config["group.remote.assignor"] = assignor
    if instance:
        config["group.instance.id"] = instance
    consume_and_commit(config, topic)


def run_aiokafka(bootstrap, topic, group, instance, assignor):
    from aiokafka import AIOKafkaConsumer

    async def run():
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    session_timeout_ms=session_timeout_ms(instance), heartbeat_interval_ms=HEARTBEAT_MS)
        await consumer.start()
        assigned = None
        while not stopping:
            batches = await consumer.getmany(timeout_ms=100)
            for messages in batches.values():
                for m in messages:
                    say(record=[m.partition, m.offset, m.value.decode()])
            if batches:
                await consumer.commit()
                say(committed=True)
            now = sorted(tp.partition for tp in consumer.assignment())
            if now != assigned:
                assigned = now
                say(assigned=now)
        await consumer.stop()

    asyncio.run(run())


MODULES = {"kafka-python": "kafka", "confluent-kafka": "confluent_kafka", "aiokafka": "aiokafka",
           "confluent-consumer-protocol": "confluent_kafka"}
RUNNERS = {
    "kafka-python": run_kafka_python,
    "confluent-kafka": run_confluent,
    "aiokafka": run_aiokafka,
    "confluent-consumer-protocol": run_confluent_consumer_protocol,
}


def stop(*_):
    global stopping
    stopping = True


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop)
    client, bootstrap, topic, group, *rest = sys.argv[1:]
    instance = rest[0] if rest and rest[0] else None
    assignor = rest[1] if len(rest) > 1 else None
    importlib.import_module(MODULES[client])  # loaded before the clock starts
    say(subscribing=True)
    RUNNERS[client](bootstrap, topic, group, instance, assignor)
