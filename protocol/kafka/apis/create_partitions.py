"""CreatePartitions (key 37): raise the partition count of topics."""

from protocol.kafka.schema import Api, F

API = Api(
    key=37,
    name="CreatePartitions",
    versions="0-3",
    flexible="2+",
    request=(
        F(
            "topics", "[]", "0+",
            F("name", "string", map_key=True),
            F("count", "int32"),
            F(
                "assignments", "[]", "0+",
                F("broker_ids", "[]int32"),
                nullable="0+",
            ),
        ),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results", "[]", "0+",
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        ),
    ),
)
