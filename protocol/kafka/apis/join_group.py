"""JoinGroup (key 11): a member joins a classic group and learns its generation."""

from protocol.kafka.schema import Api, F

API = Api(
    key=11,
    name="JoinGroup",
    versions="0-9",
    flexible="6+",
    request=(
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        # Absent before v1: the session timeout stands in for it.
        F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        F(
            "protocols", "[]", "0+",
            F("name", "string", map_key=True),
            F("metadata", "bytes"),
        ),
        F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
        F("protocol_name", "string", "0+", nullable="7+"),
        F("leader", "string"),
        F("skip_assignment", "bool", "9+", default=False),
        F("member_id", "string"),
        F(
            "members", "[]", "0+",
            F("member_id", "string"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
            F("metadata", "bytes"),
        ),
    ),
)
