"""A Kafka client in a container on the compose network: produce one record and read it back.

    python3 network_client.py BOOTSTRAP TOPIC VALUE

Runs in the project's image with kafka-python mounted from the host (it is pure Python).
"""

import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

TIMEOUT_S = 30

bootstrap, topic, value = sys.argv[1], sys.argv[2], sys.argv[3].encode()
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
offset = producer.send(topic, value).get(TIMEOUT_S).offset
producer.close(TIMEOUT_S)
consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=TIMEOUT_S * 1000)
partition = TopicPartition(topic, 0)
consumer.assign([partition])
consumer.seek(partition, offset)
record = next(iter(consumer))
consumer.close()
sys.exit(0 if record.value == value else f"read {record.value!r} at offset {offset}")
