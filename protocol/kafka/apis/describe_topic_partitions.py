"""DescribeTopicPartitions (key 75): paged partition details of topics, with ELR (KIP-966)."""

from protocol.kafka.schema import Api, F

# Kafka's Cursor struct: where a page starts in the request and the next one in the response.
CURSOR = (
    F("topic_name", "string"),
    F("partition_index", "int32"),
)

API = Api(
    key=75,
    name="DescribeTopicPartitions",
    versions="0",
    flexible="0+",
    request=(
        F(
            "topics", "[]", "0+",
            F("name", "string"),
        ),
        F("response_partition_limit", "int32", default=2000),
        F("cursor", "struct", "0+", *CURSOR, nullable="0+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("error_code", "int16"),
            F("name", "string", nullable="0+", map_key=True),
            F("topic_id", "uuid", ignorable=True),
            F("is_internal", "bool", default=False, ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", default=-1, ignorable=True),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("eligible_leader_replicas", "[]int32", nullable="0+", default=None),
                F("last_known_elr", "[]int32", nullable="0+", default=None),
                F("offline_replicas", "[]int32", ignorable=True),
            ),
            F("topic_authorized_operations", "int32", default=-2147483648),
        ),
        F("next_cursor", "struct", "0+", *CURSOR, nullable="0+", default=None),
    ),
)
