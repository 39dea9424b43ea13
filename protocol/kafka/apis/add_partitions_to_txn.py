"""AddPartitionsToTxn (key 24): enlist partitions in a transaction; v4+ batches transactions."""

from protocol.kafka.schema import Api, F

# Clients speak v0-3 (one transaction per request); brokers speak v4+ to each
# other, many transactions per request and optionally only verifying.
TOPIC = (
    F("name", "string", map_key=True),
    F("partitions", "[]int32"),
)

TOPIC_RESULT = (
    F("name", "string", map_key=True),
    F(
        "results_by_partition", "[]", "0+",
        F("partition_index", "int32", map_key=True),
        F("partition_error_code", "int16"),
    ),
)

API = Api(
    key=24,
    name="AddPartitionsToTxn",
    versions="0-5",
    flexible="3+",
    request=(
        F(
            "transactions", "[]", "4+",
            F("transactional_id", "string", "4+", map_key=True),
            F("producer_id", "int64", "4+"),
            F("producer_epoch", "int16", "4+"),
            F("verify_only", "bool", "4+", default=False),
            F("topics", "[]", "4+", *TOPIC),
        ),
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", "[]", "0-3", *TOPIC),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "4+", ignorable=True),
        F(
            "results_by_transaction", "[]", "4+",
            F("transactional_id", "string", "4+", map_key=True),
            F("topic_results", "[]", "4+", *TOPIC_RESULT),
        ),
        F("results_by_topic_v3_and_below", "[]", "0-3", *TOPIC_RESULT),
    ),
)
