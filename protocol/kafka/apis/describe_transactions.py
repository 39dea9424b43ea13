"""DescribeTransactions (key 65): the coordinator's state of transactional ids."""

from protocol.kafka.schema import Api, F

API = Api(
    key=65,
    name="DescribeTransactions",
    versions="0",
    flexible="0+",
    request=(
        F("transactional_ids", "[]string"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "transaction_states", "[]", "0+",
            F("error_code", "int16"),
            F("transactional_id", "string"),
            F("transaction_state", "string"),
            F("transaction_timeout_ms", "int32"),
            F("transaction_start_time_ms", "int64"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F(
                "topics", "[]", "0+",
                F("topic", "string", map_key=True),
                F("partitions", "[]int32"),
            ),
        ),
    ),
)
