"""Incremental fetch sessions (KIP-227).

A session remembers, per partition, what the client last asked for (fetch
offset, max bytes) and what it was last told (high watermark, log start
offset), so that later fetches name only the partitions that changed and
answers carry only partitions with news. Sessions live in a bounded cache;
the least recently used one is evicted when it is full.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field

from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@dataclass
class SessionPartition:
    topic: str
    topic_id: object
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    # What the last answer said; -1 until the partition has been answered.
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass
class FetchSession:
    session_id: int
    epoch: int = 1  # the epoch the next incremental request must carry
    partitions: dict[tuple[str, int], SessionPartition] = field(default_factory=dict)


class FetchSessions:
    def __init__(self, capacity: int = 1000):
        self.capacity = capacity
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(1)

    def start(self) -> FetchSession:
        """A new session (evicting the least recently used one when full)."""
        while len(self._sessions) >= self.capacity:
            self._sessions.popitem(last=False)
        session = FetchSession(next(self._ids) & 0x7FFFFFFF or next(self._ids))
        self._sessions[session.session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def resume(self, session_id: int, epoch: int) -> FetchSession:
        """The session an incremental request continues, at the epoch it must carry."""
        session = self._sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, f"no fetch session {session_id}")
        if epoch != session.epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                             f"fetch session {session_id} expects epoch {session.epoch}, not {epoch}")
        self._sessions.move_to_end(session_id)
        return session
