"""The error a handler answers with: a Kafka error code and a message."""

from protocol.kafka.error_codes import ErrorCode


class KafkaError(Exception):
    """A request the broker refuses, with the Kafka error code to answer."""

    def __init__(self, code: ErrorCode, message: str, record_errors: tuple[tuple[int, str], ...] = ()):
        super().__init__(message)
        self.code = code
        self.message = message
        self.record_errors = record_errors  # (index in the batch, why), for Produce's record_errors
