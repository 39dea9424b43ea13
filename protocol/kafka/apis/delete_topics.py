"""DeleteTopics (key 20): delete topics by name or, from v6, by topic id."""

from protocol.kafka.schema import Api, F

API = Api(
    key=20,
    name="DeleteTopics",
    versions="0-6",
    flexible="4+",
    request=(
        F(
            "topics", "[]", "6+",
            F("name", "string", "6+", nullable="6+", default=None),
            F("topic_id", "uuid", "6+"),
        ),
        F("topic_names", "[]string", "0-5", ignorable=True),
        F("timeout_ms", "int32"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F(
            "responses", "[]", "0+",
            F("name", "string", nullable="6+", map_key=True),
            F("topic_id", "uuid", "6+", ignorable=True),
            F("error_code", "int16"),
            F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
        ),
    ),
)
