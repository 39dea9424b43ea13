"""SaslAuthenticate (key 36): one round of SASL authentication bytes."""

from protocol.kafka.schema import Api, F

API = Api(
    key=36,
    name="SaslAuthenticate",
    versions="0-2",
    flexible="2+",
    request=(
        F("auth_bytes", "bytes"),
    ),
    response=(
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+", default=0, ignorable=True),
    ),
)
