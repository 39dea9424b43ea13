"""OffsetCommit (key 8): store a group's consumed offsets."""

from protocol.kafka.schema import Api, F

API = Api(
    key=8,
    name="OffsetCommit",
    versions="0-10",
    flexible="8+",
    request=(
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string", "1+", ignorable=True),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        # Only v2-v4 let the client choose the retention; later the broker config rules.
        F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
        F(
            "topics", "[]", "0+",
            # v10 names topics by id instead of by name.
            F("name", "string", "0-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
                F("commit_timestamp", "int64", "1", default=-1),
                F("committed_metadata", "string", "0+", nullable="0+"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("name", "string", "0-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ),
        ),
    ),
)
