"""A consume-transform-produce loop with confluent-kafka, as its own process so that a test can SIGKILL it.

    python -m tests.gateway.txn_loop BOOTSTRAP INPUT OUTPUT GROUP TOTAL [PARK_AT PARK_AFTER]

It reads INPUT as a static member of GROUP, writes transform(value) of each
record to the same partition of OUTPUT and commits the consumed offsets with
the output in one transaction (send_offsets_to_transaction). The
transactional id is fixed, so a restarted loop fences and aborts whatever its
killed predecessor left open, then resumes from the group's committed offsets.
After each poll it writes one JSON line, {"committed": N} with N the input
records committed so far (over all partitions), and it exits 0 once N is
TOTAL.

With PARK_AT ("produced": the transaction's output is written; "offsets":
its offsets are sent too) the first transaction to reach that point once
PARK_AFTER records are committed says {"parked": PARK_AT} and waits there
to be killed, so a test can kill the loop with a transaction half done.
"""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

RECORDS_PER_TRANSACTION = 5000
POLL_TIMEOUT_S = 0.5
TIMEOUT_S = 30
PARK_S = 600


def transform(value: bytes) -> bytes:
    return b"out:" + value


def say(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def connect(bootstrap: str, source: str, group: str) -> tuple[Consumer, Producer]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": f"{group}-loop",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "session.timeout.ms": 6000})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-loop", "linger.ms": 20})
    producer.init_transactions(TIMEOUT_S)
    consumer.subscribe([source])
    return consumer, producer


def next_offsets(messages) -> list[TopicPartition]:
    """The offsets to commit after `messages`: one past the last of each partition."""
    last = {}
    for m in messages:
        last[(m.topic(), m.partition())] = m.offset() + 1
    return [TopicPartition(topic, partition, offset) for (topic, partition), offset in last.items()]


def park_at(point: str, parking: str | None) -> None:
    if point == parking:
        say(parked=point)
        time.sleep(PARK_S)


def process(consumer: Consumer, producer: Producer, target: str, messages, parking: str | None) -> None:
    producer.begin_transaction()
    for m in messages:
        while True:
            try:
                producer.produce(target, value=transform(m.value()), key=m.key(), partition=m.partition())
                break
            except BufferError:
                producer.poll(0.05)
    if parking:
        producer.flush(TIMEOUT_S)
    park_at("produced", parking)
    producer.send_offsets_to_transaction(next_offsets(messages), consumer.consumer_group_metadata(), TIMEOUT_S)
    park_at("offsets", parking)
    producer.commit_transaction(TIMEOUT_S)


def rewind(consumer: Consumer) -> None:
    """Back to the committed offsets, after an aborted transaction."""
    for tp in consumer.committed(consumer.assignment(), timeout=TIMEOUT_S):
        if tp.offset >= 0:
            consumer.seek(tp)


def committed_total(consumer: Consumer) -> int:
    return sum(max(tp.offset, 0) for tp in consumer.committed(consumer.assignment(), timeout=TIMEOUT_S))


def run(bootstrap: str, source: str, target: str, group: str, total: int,
        park: str | None = None, park_after: int = 0) -> None:
    consumer, producer = connect(bootstrap, source, group)
    done = 0
    while True:
        messages = [m for m in consumer.consume(RECORDS_PER_TRANSACTION, timeout=POLL_TIMEOUT_S) if m.error() is None]
        if messages:
            try:
                process(consumer, producer, target, messages, park if done >= park_after else None)
            except KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise
                producer.abort_transaction(TIMEOUT_S)
                rewind(consumer)
                say(aborted=str(exc))
                continue
        if consumer.assignment():
            done = committed_total(consumer)
            say(committed=done)
            if done >= total:
                break
    consumer.close()


if __name__ == "__main__":
    bootstrap, source, target, group, total, *parking = sys.argv[1:]
    run(bootstrap, source, target, group, int(total), *parking[:1], *map(int, parking[1:]))
