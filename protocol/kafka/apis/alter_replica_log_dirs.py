"""AlterReplicaLogDirs (key 34): move partitions' replicas to another log directory of a broker."""

from protocol.kafka.schema import Api, F

API = Api(
    key=34,
    name="AlterReplicaLogDirs",
    versions="0-2",
    flexible="2+",
    request=(
        F(
            "dirs", "[]", "0+",
            F("path", "string", map_key=True),
            F(
                "topics", "[]", "0+",
                F("name", "string", map_key=True),
                F("partitions", "[]int32"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results", "[]", "0+",
            F("topic_name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ),
        ),
    ),
)
