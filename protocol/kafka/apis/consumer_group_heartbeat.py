"""ConsumerGroupHeartbeat (key 68): join, stay in and leave a KIP-848 consumer group."""

from protocol.kafka.schema import Api, F

# Kafka's TopicPartitions: owned partitions in the request, assigned ones in the response.
TOPIC_PARTITIONS = (
    F("topic_id", "uuid"),
    F("partitions", "[]int32"),
)

API = Api(
    key=68,
    name="ConsumerGroupHeartbeat",
    versions="0-1",
    flexible="0+",
    request=(
        F("group_id", "string"),
        F("member_id", "string"),
        F("member_epoch", "int32"),
        F("instance_id", "string", nullable="0+", default=None),
        F("rack_id", "string", nullable="0+", default=None),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("subscribed_topic_names", "[]string", nullable="0+", default=None),
        F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
        F("server_assignor", "string", nullable="0+", default=None),
        F("topic_partitions", "[]", "0+", *TOPIC_PARTITIONS, nullable="0+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("member_id", "string", nullable="0+", default=None),
        F("member_epoch", "int32"),
        F("heartbeat_interval_ms", "int32"),
        F(
            "assignment", "struct", "0+",
            F("topic_partitions", "[]", "0+", *TOPIC_PARTITIONS),
            nullable="0+", default=None,
        ),
    ),
)
