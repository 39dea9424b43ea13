"""CreateTopics (key 19): create topics with partition counts, replicas and configs."""

from protocol.kafka.schema import Api, F

API = Api(
    key=19,
    name="CreateTopics",
    versions="0-7",
    flexible="5+",
    request=(
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F("num_partitions", "int32"),
            F("replication_factor", "int16"),
            F(
                "assignments", "[]", "0+",
                F("partition_index", "int32", map_key=True),
                F("broker_ids", "[]int32"),
            ),
            F(
                "configs", "[]", "0+",
                F("name", "string", map_key=True),
                F("value", "string", nullable="0+"),
            ),
        ),
        F("timeout_ms", "int32", default=60000),
        F("validate_only", "bool", "1+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F("topic_id", "uuid", "7+", ignorable=True),
            F("error_code", "int16"),
            F("error_message", "string", "1+", nullable="0+", ignorable=True),
            F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+", ignorable=True),
            F("num_partitions", "int32", "5+", default=-1, ignorable=True),
            F("replication_factor", "int16", "5+", default=-1, ignorable=True),
            F(
                "configs", "[]", "5+",
                F("name", "string", "5+"),
                F("value", "string", "5+", nullable="5+"),
                F("read_only", "bool", "5+"),
                F("config_source", "int8", "5+", default=-1, ignorable=True),
                F("is_sensitive", "bool", "5+"),
                nullable="5+", ignorable=True,
            ),
        ),
    ),
)
