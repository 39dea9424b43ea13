"""PushTelemetry (key 72): a client's metrics, pushed as its subscription asks (KIP-714)."""

from protocol.kafka.schema import Api, F

API = Api(
    key=72,
    name="PushTelemetry",
    versions="0",
    flexible="0+",
    request=(
        F("client_instance_id", "uuid"),
        F("subscription_id", "int32"),
        F("terminating", "bool"),
        F("compression_type", "int8"),
        F("metrics", "bytes"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
    ),
)
