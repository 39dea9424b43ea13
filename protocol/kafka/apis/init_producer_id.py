"""InitProducerId (key 22): allocate a producer id and epoch for idempotence or transactions."""

from protocol.kafka.schema import Api, F

# v6 (two-phase commit, KIP-939) is marked unstable in Kafka 4.1: brokers
# do not advertise it unless unstable versions are enabled.
API = Api(
    key=22,
    name="InitProducerId",
    versions="0-6",
    flexible="2+",
    request=(
        F("transactional_id", "string", nullable="0+"),
        F("transaction_timeout_ms", "int32"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
        F("enable2_pc", "bool", "6+", default=False),
        F("keep_prepared_txn", "bool", "6+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32", ignorable=True),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
        F("ongoing_txn_producer_id", "int64", "6+", default=-1),
        F("ongoing_txn_producer_epoch", "int16", "6+", default=-1),
    ),
)
