"""ExpireDelegationToken (key 40, KIP-48): bring a token's expiry forward; a negative period ends it at once."""

from protocol.kafka.apis.renew_delegation_token import expiry_change

API = expiry_change(40, "ExpireDelegationToken", "expiry_time_period_ms")
