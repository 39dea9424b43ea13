"""CreateDelegationToken (key 38, KIP-48): a token for its owner, its HMAC the password to authenticate with.

v3 names an owner other than the requester (KIP-373) and answers who requested the token.
"""

from protocol.kafka.schema import Api, F, Field


def token_fields(timestamp_suffix: str) -> tuple[Field, ...]:
    """A token as this response and DescribeDelegationToken's describe it (whose timestamps' names lack "_ms"):
    owner, requester (v3+), timestamps, id, HMAC."""
    return (
        F("principal_type", "string"),
        F("principal_name", "string"),
        F("token_requester_principal_type", "string", "3+"),
        F("token_requester_principal_name", "string", "3+"),
        *(F(f"{name}_timestamp{timestamp_suffix}", "int64") for name in ("issue", "expiry", "max")),
        F("token_id", "string"),
        F("hmac", "bytes"),
    )

API = Api(
    key=38,
    name="CreateDelegationToken",
    versions="0-3",
    flexible="2+",
    request=(
        F("owner_principal_type", "string", "3+", nullable="3+"),  # null or empty name: the requester
        F("owner_principal_name", "string", "3+", nullable="3+"),
        F("renewers", "[]", "0+", F("principal_type", "string"), F("principal_name", "string")),
        F("max_lifetime_ms", "int64"),  # -1: the broker's delegation.token.max.lifetime.ms
    ),
    response=(F("error_code", "int16"), *token_fields("_ms"), F("throttle_time_ms", "int32")),
)
