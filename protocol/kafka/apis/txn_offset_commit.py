"""TxnOffsetCommit (key 28): commit consumer offsets as part of a transaction."""

from protocol.kafka.schema import Api, F

API = Api(
    key=28,
    name="TxnOffsetCommit",
    versions="0-5",
    flexible="3+",
    request=(
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                F("committed_metadata", "string", nullable="0+"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ),
        ),
    ),
)
