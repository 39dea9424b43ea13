"""EndTxn (key 26): commit or abort a transaction."""

from protocol.kafka.schema import Api, F

API = Api(
    key=26,
    name="EndTxn",
    versions="0-5",
    flexible="3+",
    request=(
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        # v5 (transaction protocol 2) bumps the epoch on every commit/abort.
        F("producer_id", "int64", "5+", default=-1, ignorable=True),
        F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
    ),
)
