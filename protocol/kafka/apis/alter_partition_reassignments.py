"""AlterPartitionReassignments (key 45): move partitions to other replicas, or cancel a move."""

from protocol.kafka.schema import Api, F

API = Api(
    key=45,
    name="AlterPartitionReassignments",
    versions="0-1",
    flexible="0+",
    request=(
        F("timeout_ms", "int32", default=60000),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("replicas", "[]int32", nullable="0+", default=None),  # null: cancel
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("allow_replication_factor_change", "bool", "1+", default=True, ignorable=True),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F(
            "responses", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
            ),
        ),
    ),
)
