"""OffsetDelete (key 47): drop committed offsets of a group for some partitions."""

from protocol.kafka.schema import Api, F

API = Api(
    key=47,
    name="OffsetDelete",
    versions="0",
    flexible="none",
    request=(
        F("group_id", "string"),
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
            ),
        ),
    ),
    response=(
        F("error_code", "int16"),
        F("throttle_time_ms", "int32", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32", map_key=True),
                F("error_code", "int16"),
            ),
        ),
    ),
)
