"""DescribeLogDirs (key 35): the log directories of a broker and the partitions in them."""

from protocol.kafka.schema import Api, F

API = Api(
    key=35,
    name="DescribeLogDirs",
    versions="0-4",
    flexible="2+",
    request=(
        F(
            "topics", "[]", "0+",
            F("topic", "string"),
            F("partitions", "[]int32"),
            nullable="0+",
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "3+", ignorable=True),
        F(
            "results", "[]", "0+",
            F("error_code", "int16"),
            F("log_dir", "string"),
            F(
                "topics", "[]", "0+",
                F("name", "string"),
                F(
                    "partitions", "[]", "0+",
                    F("partition_index", "int32"),
                    F("partition_size", "int64"),
                    F("offset_lag", "int64"),
                    F("is_future_key", "bool"),
                ),
            ),
            F("total_bytes", "int64", "4+", default=-1, ignorable=True),
            F("usable_bytes", "int64", "4+", default=-1, ignorable=True),
        ),
    ),
)
