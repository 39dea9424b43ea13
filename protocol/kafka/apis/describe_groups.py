"""DescribeGroups (key 15): state, protocol and members of classic groups."""

from protocol.kafka.schema import Api, F

API = Api(
    key=15,
    name="DescribeGroups",
    versions="0-6",
    flexible="5+",
    request=(
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", "3+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F(
            "groups", "[]", "0+",
            F("error_code", "int16"),
            F("error_message", "string", "6+", nullable="6+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F(
                "members", "[]", "0+",
                F("member_id", "string"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            ),
            F("authorized_operations", "int32", "3+", default=-2147483648),
        ),
    ),
)
