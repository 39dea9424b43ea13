"""Produce (key 0): append record batches to partitions."""

from protocol.kafka.schema import Api, F

API = Api(
    key=0,
    name="Produce",
    versions="0-13",
    flexible="9+",
    request=(
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16"),
        F("timeout_ms", "int32"),
        F(
            "topic_data", "[]", "0+",
            # v13 names topics by id instead of by name.
            F("name", "string", "0-12", map_key=True, ignorable=True),
            F("topic_id", "uuid", "13+", map_key=True, ignorable=True),
            F(
                "partition_data", "[]", "0+",
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            ),
        ),
    ),
    response=(
        F(
            "responses", "[]", "0+",
            F("name", "string", "0-12", map_key=True, ignorable=True),
            F("topic_id", "uuid", "13+", map_key=True, ignorable=True),
            F(
                "partition_responses", "[]", "0+",
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
                F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                F(
                    "record_errors", "[]", "8+",
                    F("batch_index", "int32", "8+"),
                    F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
                    ignorable=True,
                ),
                F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
                F(
                    "current_leader", "struct", "10+",
                    F("leader_id", "int32", "10+", default=-1),
                    F("leader_epoch", "int32", "10+", default=-1),
                    tag=0, tagged="10+",
                ),
            ),
        ),
        F("throttle_time_ms", "int32", "1+", default=0, ignorable=True),
        F(
            "node_endpoints", "[]", "10+",
            F("node_id", "int32", "10+", map_key=True),
            F("host", "string", "10+"),
            F("port", "int32", "10+"),
            F("rack", "string", "10+", nullable="10+", default=None),
            tag=0, tagged="10+",
        ),
    ),
)
