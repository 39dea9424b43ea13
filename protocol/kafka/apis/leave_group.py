"""LeaveGroup (key 13): members leave a classic group."""

from protocol.kafka.schema import Api, F

API = Api(
    key=13,
    name="LeaveGroup",
    versions="0-5",
    flexible="4+",
    request=(
        F("group_id", "string"),
        # v3+ remove a batch of members; v0-2 one member.
        F("member_id", "string", "0-2"),
        F(
            "members", "[]", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16"),
        F(
            "members", "[]", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+"),
            F("error_code", "int16", "3+"),
        ),
    ),
)
