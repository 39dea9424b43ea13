"""TxnOffsetCommit's member checks at the group coordinator, as Kafka's validateTransactionalOffsetCommit."""

import pytest

from gateway.group.group_coordinator import GroupCoordinator
from gateway.kafka_error import KafkaError
from gateway.settings.table import Settings
from protocol.kafka.error_codes import ErrorCode


def test_a_generation_of_a_group_that_does_not_exist_is_illegal():
    coordinator = GroupCoordinator(Settings().broker, None)
    with pytest.raises(KafkaError) as refused:
        coordinator.validate_transactional_commit("nobody-joined", "member-1", None, 3)
    assert refused.value.code == ErrorCode.ILLEGAL_GENERATION
    coordinator.validate_transactional_commit("nobody-joined", "", None, -1)  # no group metadata: accepted
