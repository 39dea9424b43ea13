"""DescribeDelegationToken (key 41, KIP-48): the tokens of some owners (null: of everyone) the requester may see."""

from protocol.kafka.apis.create_delegation_token import token_fields
from protocol.kafka.schema import Api, F

API = Api(
    key=41,
    name="DescribeDelegationToken",
    versions="0-3",
    flexible="2+",
    request=(
        F("owners", "[]", "0+", F("principal_type", "string"), F("principal_name", "string"), nullable="0+"),
    ),
    response=(
        F("error_code", "int16"),
        F(
            "tokens", "[]", "0+",
            *token_fields(""),
            F("renewers", "[]", "0+", F("principal_type", "string"), F("principal_name", "string")),
        ),
        F("throttle_time_ms", "int32"),
    ),
)
