"""DescribeProducers (key 61): the active idempotent and transactional producers of partitions."""

from protocol.kafka.schema import Api, F

API = Api(
    key=61,
    name="DescribeProducers",
    versions="0",
    flexible="0+",
    request=(
        F(
            "topics", "[]", "0+",
            F("name", "string"),
            F("partition_indexes", "[]int32"),
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
                F("error_message", "string", nullable="0+", default=None),
                F(
                    "active_producers", "[]", "0+",
                    F("producer_id", "int64"),
                    F("producer_epoch", "int32"),
                    F("last_sequence", "int32", default=-1),
                    F("last_timestamp", "int64", default=-1),
                    F("coordinator_epoch", "int32"),
                    F("current_txn_start_offset", "int64", default=-1),
                ),
            ),
        ),
    ),
)
