"""DescribeClientQuotas (key 48, KIP-546): the quotas of the entities matching a filter."""

from protocol.kafka.schema import Api, F

API = Api(
    key=48,
    name="DescribeClientQuotas",
    versions="0-1",
    flexible="1+",
    request=(
        F(
            "components", "[]", "0+",
            F("entity_type", "string"),
            F("match_type", "int8"),  # 0: the name exactly, 1: the default entity, 2: any entity of the type
            F("match", "string", nullable="0+"),
        ),
        F("strict", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "entries", "[]", "0+",
            F("entity", "[]", "0+", F("entity_type", "string"), F("entity_name", "string", nullable="0+")),
            F("values", "[]", "0+", F("key", "string"), F("value", "float64")),
            nullable="0+",
        ),
    ),
)
