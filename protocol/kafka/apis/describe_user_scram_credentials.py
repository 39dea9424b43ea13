"""DescribeUserScramCredentials (key 50, KIP-554): the SCRAM mechanisms and iterations of users."""

from protocol.kafka.schema import Api, F

API = Api(
    key=50,
    name="DescribeUserScramCredentials",
    versions="0",
    flexible="0+",
    request=(
        F("users", "[]", "0+", F("name", "string"), nullable="0+"),  # null or empty: every user
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "results", "[]", "0+",
            F("user", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("credential_infos", "[]", "0+", F("mechanism", "int8"), F("iterations", "int32")),
        ),
    ),
)
