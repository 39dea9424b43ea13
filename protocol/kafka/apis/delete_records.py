"""DeleteRecords (key 21): advance partitions' log start offsets."""

from protocol.kafka.schema import Api, F

API = Api(
    key=21,
    name="DeleteRecords",
    versions="0-2",
    flexible="2+",
    request=(
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("offset", "int64"),
            ),
        ),
        F("timeout_ms", "int32"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32", map_key=True),
                F("low_watermark", "int64"),
                F("error_code", "int16"),
            ),
        ),
    ),
)
