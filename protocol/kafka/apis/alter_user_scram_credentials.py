"""AlterUserScramCredentials (key 51, KIP-554): add, replace or delete users' SCRAM credentials.

The client salts the password itself: the request carries the salt and the
salted password, never the password.
"""

from protocol.kafka.schema import Api, F

API = Api(
    key=51,
    name="AlterUserScramCredentials",
    versions="0",
    flexible="0+",
    request=(
        F("deletions", "[]", "0+", F("name", "string"), F("mechanism", "int8")),
        F(
            "upsertions", "[]", "0+",
            F("name", "string"),
            F("mechanism", "int8"),
            F("iterations", "int32"),
            F("salt", "bytes"),
            F("salted_password", "bytes"),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results", "[]", "0+",
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        ),
    ),
)
