"""RenewDelegationToken (key 39, KIP-48): push a token's expiry further, within its maximum lifetime.

ExpireDelegationToken is the same message with another name for the period.
"""

from protocol.kafka.schema import Api, F


def expiry_change(key: int, name: str, period: str) -> Api:
    """A request naming a token by its HMAC with a period, answered with the token's new expiry timestamp."""
    return Api(
        key=key,
        name=name,
        versions="0-2",
        flexible="2+",
        request=(F("hmac", "bytes"), F(period, "int64")),
        response=(F("error_code", "int16"), F("expiry_timestamp_ms", "int64"), F("throttle_time_ms", "int32")),
    )


API = expiry_change(39, "RenewDelegationToken", "renew_period_ms")  # period -1: delegation.token.expiry.time.ms
