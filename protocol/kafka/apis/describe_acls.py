"""DescribeAcls (key 29): list the ACLs matching a filter."""

from protocol.kafka.schema import Api, F

API = Api(
    key=29,
    name="DescribeAcls",
    versions="0-3",
    flexible="2+",
    request=(
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F(
            "resources", "[]", "0+",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=3),
            F(
                "acls", "[]", "0+",
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permission_type", "int8"),
            ),
        ),
    ),
)
