"""ListConfigResources (key 74; ListClientMetricsResources in Kafka 4.0, v0): the config resources
an admin client may describe. v1 (Kafka 4.1, KIP-1142) asks for resource types and answers with them."""

from protocol.kafka.schema import Api, F

CLIENT_METRICS = 16  # the only type v0 lists, and the type a v0 answer's resources have

API = Api(
    key=74,
    name="ListConfigResources",
    versions="0-1",
    flexible="0+",
    request=(
        F("resource_types", "[]int8", "1+"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F(
            "config_resources", "[]", "0+",
            F("resource_name", "string"),
            F("resource_type", "int8", "1+", default=CLIENT_METRICS, ignorable=True),
        ),
    ),
)
