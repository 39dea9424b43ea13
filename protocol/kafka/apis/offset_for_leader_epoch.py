"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for log truncation."""

from protocol.kafka.schema import Api, F

API = Api(
    key=23,
    name="OffsetForLeaderEpoch",
    versions="0-4",
    flexible="4+",
    request=(
        F("replica_id", "int32", "3+", default=-2, ignorable=True),
        F(
            "topics", "[]", "0+",
            F("topic", "string", map_key=True),
            F(
                "partitions", "[]", "0+",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                F("leader_epoch", "int32"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("topic", "string", map_key=True),
            F(
                "partitions", "[]", "0+",
                F("error_code", "int16"),
                F("partition", "int32"),
                F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
                F("end_offset", "int64", default=-1),
            ),
        ),
    ),
)
