"""SaslHandshake (key 17): the client picks a SASL mechanism."""

from protocol.kafka.schema import Api, F

API = Api(
    key=17,
    name="SaslHandshake",
    versions="0-1",
    flexible="none",
    request=(
        F("mechanism", "string"),
    ),
    response=(
        F("error_code", "int16"),
        F("mechanisms", "[]string"),
    ),
)
