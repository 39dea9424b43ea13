"""DescribeConfigs (key 32): read the configuration of topics, brokers and other resources."""

from protocol.kafka.schema import Api, F

API = Api(
    key=32,
    name="DescribeConfigs",
    versions="0-4",
    flexible="4+",
    request=(
        F(
            "resources", "[]", "0+",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", "[]string", nullable="0+"),
        ),
        F("include_synonyms", "bool", "1+", default=False),
        F("include_documentation", "bool", "3+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results", "[]", "0+",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F(
                "configs", "[]", "0+",
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("read_only", "bool"),
                # -1 stands in for v0, which lacks the field and whose real source
                # depends on the resource type.
                F("config_source", "int8", "1+", default=-1, ignorable=True),
                F("is_default", "bool", "0"),
                F("is_sensitive", "bool"),
                F(
                    "synonyms", "[]", "1+",
                    F("name", "string", "1+"),
                    F("value", "string", "1+", nullable="0+"),
                    F("source", "int8", "1+"),
                    ignorable=True,
                ),
                F("config_type", "int8", "3+", default=0, ignorable=True),
                F("documentation", "string", "3+", nullable="0+", ignorable=True),
            ),
        ),
    ),
)
