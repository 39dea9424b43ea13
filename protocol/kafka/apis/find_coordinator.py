"""FindCoordinator (key 10): which broker coordinates a group, transaction or share key."""

from protocol.kafka.schema import Api, F

API = Api(
    key=10,
    name="FindCoordinator",
    versions="0-6",
    flexible="3+",
    request=(
        # v4+ batch several keys; v0-3 ask for one.
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+", default=0),
        F("coordinator_keys", "[]string", "4+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F(
            "coordinators", "[]", "4+",
            F("key", "string", "4+"),
            F("node_id", "int32", "4+"),
            F("host", "string", "4+"),
            F("port", "int32", "4+"),
            F("error_code", "int16", "4+"),
            F("error_message", "string", "4+", nullable="4+", ignorable=True),
        ),
    ),
)
