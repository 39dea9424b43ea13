"""Metadata (key 3): brokers, controller and topic partition leadership."""

from protocol.kafka.schema import Api, F

API = Api(
    key=3,
    name="Metadata",
    versions="0-13",
    flexible="9+",
    request=(
        # v0: an empty list means all topics; from v1 null means all, empty means none.
        F(
            "topics", "[]", "0+",
            F("topic_id", "uuid", "10+", ignorable=True),
            F("name", "string", "0+", nullable="10+"),
            nullable="1+",
        ),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "brokers", "[]", "0+",
            F("node_id", "int32", map_key=True),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
        ),
        F("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
        F("controller_id", "int32", "1+", default=-1, ignorable=True),
        F(
            "topics", "[]", "0+",
            F("error_code", "int16"),
            F("name", "string", "0+", nullable="12+", map_key=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("is_internal", "bool", "1+", default=False, ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", "7+", default=-1, ignorable=True),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("offline_replicas", "[]int32", "5+", ignorable=True),
            ),
            F("topic_authorized_operations", "int32", "8+", default=-2147483648),
        ),
        F("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
        F("error_code", "int16", "13+", ignorable=True),
    ),
)
