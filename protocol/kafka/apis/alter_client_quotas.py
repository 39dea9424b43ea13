"""AlterClientQuotas (key 49, KIP-546): set or remove quotas of entities."""

from protocol.kafka.schema import Api, F

ENTITY = (F("entity_type", "string"), F("entity_name", "string", nullable="0+"))  # a null name: the default

API = Api(
    key=49,
    name="AlterClientQuotas",
    versions="0-1",
    flexible="1+",
    request=(
        F(
            "entries", "[]", "0+",
            F("entity", "[]", "0+", *ENTITY),
            F("ops", "[]", "0+", F("key", "string"), F("value", "float64"), F("remove", "bool")),
        ),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "entries", "[]", "0+",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("entity", "[]", "0+", *ENTITY),
        ),
    ),
)
