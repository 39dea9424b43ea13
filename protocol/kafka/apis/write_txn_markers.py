"""WriteTxnMarkers (key 27): coordinator asks partition leaders to write commit/abort markers."""

from protocol.kafka.schema import Api, F

API = Api(
    key=27,
    name="WriteTxnMarkers",
    versions="0-1",
    flexible="1+",
    request=(
        F(
            "markers", "[]", "0+",
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("transaction_result", "bool"),
            F(
                "topics", "[]", "0+",
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            ),
            F("coordinator_epoch", "int32"),
        ),
    ),
    response=(
        F(
            "markers", "[]", "0+",
            F("producer_id", "int64"),
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
    ),
)
