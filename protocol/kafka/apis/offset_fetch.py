"""OffsetFetch (key 9): read a group's committed offsets."""

from protocol.kafka.schema import Api, F

API = Api(
    key=9,
    name="OffsetFetch",
    versions="0-10",
    flexible="6+",
    request=(
        # v0-7 ask for one group; v8+ batch several groups.
        F("group_id", "string", "0-7"),
        F(
            "topics", "[]", "0-7",
            F("name", "string", "0-7"),
            F("partition_indexes", "[]int32", "0-7"),
            nullable="2-7",
        ),
        F(
            "groups", "[]", "8+",
            F("group_id", "string", "8+"),
            F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
            F("member_epoch", "int32", "9+", default=-1, ignorable=True),
            F(
                "topics", "[]", "8+",
                F("name", "string", "8-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),
                F("partition_indexes", "[]int32", "8+"),
                nullable="8+",
            ),
        ),
        F("require_stable", "bool", "7+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "topics", "[]", "0-7",
            F("name", "string", "0-7"),
            F(
                "partitions", "[]", "0-7",
                F("partition_index", "int32", "0-7"),
                F("committed_offset", "int64", "0-7"),
                F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
                F("metadata", "string", "0-7", nullable="0-7"),
                F("error_code", "int16", "0-7"),
            ),
        ),
        F("error_code", "int16", "2-7", default=0, ignorable=True),
        F(
            "groups", "[]", "8+",
            F("group_id", "string", "8+"),
            F(
                "topics", "[]", "8+",
                F("name", "string", "8-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),
                F(
                    "partitions", "[]", "8+",
                    F("partition_index", "int32", "8+"),
                    F("committed_offset", "int64", "8+"),
                    F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                    F("metadata", "string", "8+", nullable="8+"),
                    F("error_code", "int16", "8+"),
                ),
            ),
            F("error_code", "int16", "8+", default=0),
        ),
    ),
)
