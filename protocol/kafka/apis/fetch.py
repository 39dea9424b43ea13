"""Fetch (key 1): read record batches from partitions, optionally in a fetch session."""

from protocol.kafka.schema import Api, F

API = Api(
    key=1,
    name="Fetch",
    versions="0-17",
    flexible="12+",
    request=(
        F(
            "cluster_id", "string", "12+",
            nullable="12+", default=None, tag=0, tagged="12+", ignorable=True,
        ),
        # From v15 a follower identifies itself through replica_state instead.
        F("replica_id", "int32", "0-14", default=-1),
        F(
            "replica_state", "struct", "15+",
            F("replica_id", "int32", "15+", default=-1),
            F("replica_epoch", "int64", "15+", default=-1),
            tag=1, tagged="15+",
        ),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
        F("isolation_level", "int8", "4+", default=0, ignorable=True),
        F("session_id", "int32", "7+", default=0, ignorable=True),
        F("session_epoch", "int32", "7+", default=-1, ignorable=True),
        F(
            "topics", "[]", "0+",
            F("topic", "string", "0-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),
                F("fetch_offset", "int64"),
                F("last_fetched_epoch", "int32", "12+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                F("partition_max_bytes", "int32"),
                F("replica_directory_id", "uuid", "17+", tag=0, tagged="17+", ignorable=True),
            ),
        ),
        F(
            "forgotten_topics_data", "[]", "7+",
            F("topic", "string", "7-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),
            F("partitions", "[]int32", "7+"),
        ),
        F("rack_id", "string", "11+", default="", ignorable=True),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "7+", ignorable=True),
        F("session_id", "int32", "7+", default=0),
        F(
            "responses", "[]", "0+",
            F("topic", "string", "0-12", ignorable=True),
            F("topic_id", "uuid", "13+", ignorable=True),
            F(
                "partitions", "[]", "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                F(
                    "diverging_epoch", "struct", "12+",
                    F("epoch", "int32", "12+", default=-1),
                    F("end_offset", "int64", "12+", default=-1),
                    tag=0, tagged="12+",
                ),
                F(
                    "current_leader", "struct", "12+",
                    F("leader_id", "int32", "12+", default=-1),
                    F("leader_epoch", "int32", "12+", default=-1),
                    tag=1, tagged="12+",
                ),
                F(
                    "snapshot_id", "struct", "12+",
                    F("end_offset", "int64", "0+", default=-1),
                    F("epoch", "int32", "0+", default=-1),
                    tag=2, tagged="12+",
                ),
                F(
                    "aborted_transactions", "[]", "4+",
                    F("producer_id", "int64", "4+"),
                    F("first_offset", "int64", "4+"),
                    nullable="4+", ignorable=True,
                ),
                F("preferred_read_replica", "int32", "11+", default=-1),
                F("records", "records", nullable="0+"),
            ),
        ),
        F(
            "node_endpoints", "[]", "16+",
            F("node_id", "int32", "16+", map_key=True),
            F("host", "string", "16+"),
            F("port", "int32", "16+"),
            F("rack", "string", "16+", nullable="16+", default=None),
            tag=0, tagged="16+",
        ),
    ),
)
