"""DescribeQuorum (key 55): the KRaft quorum of the cluster's metadata log."""

from protocol.kafka.schema import Api, F

REPLICA_STATE = (
    F("replica_id", "int32"),
    F("replica_directory_id", "uuid", "2+"),
    F("log_end_offset", "int64"),
    F("last_fetch_timestamp", "int64", "1+", default=-1, ignorable=True),
    F("last_caught_up_timestamp", "int64", "1+", default=-1, ignorable=True),
)

API = Api(
    key=55,
    name="DescribeQuorum",
    versions="0-2",
    flexible="0+",
    request=(
        F(
            "topics", "[]", "0+",
            F("topic_name", "string"),
            F("partitions", "[]", "0+", F("partition_index", "int32")),
        ),
    ),
    response=(
        F("error_code", "int16"),
        F("error_message", "string", "2+", nullable="2+", ignorable=True),
        F(
            "topics", "[]", "0+",
            F("topic_name", "string"),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", "2+", nullable="2+", ignorable=True),
                F("leader_id", "int32"),
                F("leader_epoch", "int32"),
                F("high_watermark", "int64"),
                F("current_voters", "[]", "0+", *REPLICA_STATE),
                F("observers", "[]", "0+", *REPLICA_STATE),
            ),
        ),
        F(
            "nodes", "[]", "2+",
            F("node_id", "int32", "2+"),
            F(
                "listeners", "[]", "2+",
                F("name", "string", "2+", map_key=True),
                F("host", "string", "2+"),
                F("port", "uint16", "2+"),
            ),
        ),
    ),
)
