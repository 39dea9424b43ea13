"""ElectLeaders (key 43): elect the preferred (or any live) replica as partition leader."""

from protocol.kafka.schema import Api, F

API = Api(
    key=43,
    name="ElectLeaders",
    versions="0-2",
    flexible="2+",
    request=(
        F("election_type", "int8", "1+"),
        F(
            "topic_partitions", "[]", "0+",
            F("topic", "string"),
            F("partitions", "[]int32"),
            nullable="0+",
        ),
        F("timeout_ms", "int32", default=60000),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "1+"),
        F(
            "replica_election_results", "[]", "0+",
            F("topic", "string"),
            F(
                "partition_result", "[]", "0+",
                F("partition_id", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+"),
            ),
        ),
    ),
)
