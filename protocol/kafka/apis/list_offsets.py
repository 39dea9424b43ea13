"""ListOffsets (key 2): look up offsets by timestamp (earliest, latest, ...)."""

from protocol.kafka.schema import Api, F

API = Api(
    key=2,
    name="ListOffsets",
    versions="0-10",
    flexible="6+",
    request=(
        F("replica_id", "int32"),
        F("isolation_level", "int8", "2+"),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
                F("timestamp", "int64"),
                # v0 could ask for several offsets; later versions return one.
                F("max_num_offsets", "int32", "0", default=1),
            ),
        ),
        F("timeout_ms", "int32", "10+", ignorable=True),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ),
        ),
    ),
)
