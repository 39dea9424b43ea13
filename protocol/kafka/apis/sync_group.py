"""SyncGroup (key 14): the leader hands out assignments; every member receives its own."""

from protocol.kafka.schema import Api, F

API = Api(
    key=14,
    name="SyncGroup",
    versions="0-5",
    flexible="4+",
    request=(
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        F(
            "assignments", "[]", "0+",
            F("member_id", "string"),
            F("assignment", "bytes"),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16"),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("assignment", "bytes"),
    ),
)
