"""ListPartitionReassignments (key 46): the partition reassignments in progress."""

from protocol.kafka.schema import Api, F

API = Api(
    key=46,
    name="ListPartitionReassignments",
    versions="0",
    flexible="0+",
    request=(
        F("timeout_ms", "int32", default=60000),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F("partition_indexes", "[]int32"),
            nullable="0+", default=None,
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("replicas", "[]int32"),
                F("adding_replicas", "[]int32"),
                F("removing_replicas", "[]int32"),
            ),
        ),
    ),
)
