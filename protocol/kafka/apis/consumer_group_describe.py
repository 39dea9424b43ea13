"""ConsumerGroupDescribe (key 69): members and assignments of KIP-848 consumer groups."""

from protocol.kafka.schema import Api, F

# Kafka's commonStructs TopicPartitions and Assignment, shared by both assignments.
TOPIC_PARTITIONS = (
    F("topic_id", "uuid"),
    F("topic_name", "string"),
    F("partitions", "[]int32"),
)
ASSIGNMENT = (
    F("topic_partitions", "[]", "0+", *TOPIC_PARTITIONS),
)

API = Api(
    key=69,
    name="ConsumerGroupDescribe",
    versions="0-1",
    flexible="0+",
    request=(
        F("group_ids", "[]string"),
        F("include_authorized_operations", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "groups", "[]", "0+",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("group_epoch", "int32"),
            F("assignment_epoch", "int32"),
            F("assignor_name", "string"),
            F(
                "members", "[]", "0+",
                F("member_id", "string"),
                F("instance_id", "string", nullable="0+", default=None),
                F("rack_id", "string", nullable="0+", default=None),
                F("member_epoch", "int32"),
                F("client_id", "string"),
                F("client_host", "string"),
                F("subscribed_topic_names", "[]string"),
                F("subscribed_topic_regex", "string", nullable="0+", default=None),
                F("assignment", "struct", "0+", *ASSIGNMENT),
                F("target_assignment", "struct", "0+", *ASSIGNMENT),
                F("member_type", "int8", "1+", default=-1, ignorable=True),
            ),
            F("authorized_operations", "int32", default=-2147483648),
        ),
    ),
)
