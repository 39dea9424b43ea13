"""Topic set-up for tests, through confluent-kafka's AdminClient."""

from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 30.0


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})],
                                  operation_timeout=TIMEOUT_S)
    futures[name].result(TIMEOUT_S)
