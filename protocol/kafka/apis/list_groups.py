"""ListGroups (key 16): the groups a broker coordinates, optionally filtered."""

from protocol.kafka.schema import Api, F

API = Api(
    key=16,
    name="ListGroups",
    versions="0-5",
    flexible="3+",
    request=(
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16"),
        F(
            "groups", "[]", "0+",
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", "4+", ignorable=True),
            F("group_type", "string", "5+", ignorable=True),
        ),
    ),
)
