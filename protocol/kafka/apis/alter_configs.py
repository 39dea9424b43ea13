"""AlterConfigs (key 33): replace the whole configuration of resources."""

from protocol.kafka.schema import Api, F

API = Api(
    key=33,
    name="AlterConfigs",
    versions="0-2",
    flexible="2+",
    request=(
        F(
            "resources", "[]", "0+",
            F("resource_type", "int8", map_key=True),
            F("resource_name", "string", map_key=True),
            F(
                "configs", "[]", "0+",
                F("name", "string", map_key=True),
                F("value", "string", nullable="0+"),
            ),
        ),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "responses", "[]", "0+",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
        ),
    ),
)
