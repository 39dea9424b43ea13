"""DeleteGroups (key 42): delete empty consumer groups and their offsets."""

from protocol.kafka.schema import Api, F

API = Api(
    key=42,
    name="DeleteGroups",
    versions="0-2",
    flexible="2+",
    request=(
        F("groups_names", "[]string"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results", "[]", "0+",
            F("group_id", "string", map_key=True),
            F("error_code", "int16"),
        ),
    ),
)
