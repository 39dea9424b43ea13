"""Markers are checked like Kafka's: older producer or coordinator epochs are refused."""

import pytest

from gateway.kafka_error import KafkaError
from gateway.partitions.producer_state import ProducerStates
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, RecordBatch, build_control_batch


def marker(producer_epoch: int, coordinator_epoch: int) -> RecordBatch:
    data = build_control_batch(ControlType.ABORT, offset=0, timestamp=1, producer_id=7,
                               producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch)
    return RecordBatch(memoryview(bytearray(data)))


@pytest.mark.parametrize("producer_epoch, coordinator_epoch, refused", [
    (2, 4, ErrorCode.INVALID_PRODUCER_EPOCH),
    (3, 3, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    (3, 4, None),
    (4, 5, None),
])
def test_a_marker_older_than_the_last_is_refused(producer_epoch, coordinator_epoch, refused):
    states = ProducerStates()
    states.appended(marker(3, 4), base_offset=0, dafka_sequence=0)
    late = marker(producer_epoch, coordinator_epoch)
    if refused is None:
        assert states.duplicate_of(late) is None
    else:
        with pytest.raises(KafkaError) as raised:
            states.duplicate_of(late)
        assert raised.value.code == refused
