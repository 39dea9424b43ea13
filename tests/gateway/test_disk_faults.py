"""A store whose disk fails: producers get errors, never an acknowledgement of data not
stored, and writing resumes once the disk takes writes again.

The disk is "filled" without mounts or root: the file size limit (RLIMIT_FSIZE) of the
gateway and its store is lowered at run time, so a write past it fails with EFBIG (Python
ignores SIGXFSZ). Stores restarted meanwhile inherit the gateway's limit. Only the soft
limit is lowered, so that an unprivileged test can raise it back.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaStorageError, NotEnoughReplicasAfterAppendError, NotEnoughReplicasError

from tests.gateway.conftest import IN_PROCESS
from tests.gateway.server import GatewayProcess, children

pytestmark = pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs resource.prlimit (Linux)")

DEADLINE_S = 60.0
MARGIN = 512 * 1024  # bytes each process may still write to a file once the limit is set (logs: ~25 KB a test)
# The gateway's answers while its store is down or failing: never REQUEST_TIMED_OUT, so within
# ANSWER_S, well before the clients' request timeout (REQUEST_TIMEOUT_MS).
STORE_FAILURES = (NotEnoughReplicasError, NotEnoughReplicasAfterAppendError, KafkaStorageError)
ANSWER_S = 10.0
REQUEST_TIMEOUT_MS = 30000


def limit_file_size(pids: list[int], size: int) -> None:
    """The soft limit of each process (one that ended meanwhile is skipped)."""
    for pid in pids:
        try:
            _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (size if hard == resource.RLIM_INFINITY else min(size, hard),
                                                          hard))
        except ProcessLookupError:
            pass


def largest_file(*directories_or_files: Path) -> int:
    paths = [p for d in directories_or_files for p in ([d] if d.is_file() else d.rglob("*")) if p.is_file()]
    return max(path.stat().st_size for path in paths)


def produce(producer: KafkaProducer, value: bytes) -> bool:
    """Whether the gateway acknowledged `value`; False for the errors of a store that failed,
    which come at once."""
    sent = time.monotonic()
    try:
        producer.send("faults", value, partition=0).get(DEADLINE_S)
    except STORE_FAILURES:
        assert time.monotonic() - sent < ANSWER_S, "the failure was answered only after a wait"
        return False
    return True


def read_back(bootstrap: str, last: bytes) -> list[bytes]:
    """Partition 0 of "faults" from the beginning, up to `last`."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition("faults", 0)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while last not in values and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=500).values():
                values += [message.value for message in messages]
        return values
    finally:
        consumer.close()


@IN_PROCESS
def test_a_full_disk_gives_errors_never_false_acknowledgements_and_writing_resumes(tmp_path, in_process):
    gateway = GatewayProcess(tmp_path / "gateway", "--embedded-stores-in-process", in_process).start()
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks="all", retries=0,
                             request_timeout_ms=REQUEST_TIMEOUT_MS, max_block_ms=REQUEST_TIMEOUT_MS)
    single = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks=1, retries=0,
                           request_timeout_ms=REQUEST_TIMEOUT_MS, max_block_ms=REQUEST_TIMEOUT_MS)
    values = (b"%06d" % i + bytes(4000) for i in range(10**6))
    acknowledged: list[bytes] = []
    try:
        while len(acknowledged) < 20:
            value = next(values)
            assert produce(producer, value)
            acknowledged.append(value)
        limit = largest_file(gateway.data_dir / "store-0", gateway.log_path) + MARGIN
        processes = [gateway.process.pid, *children(gateway.process.pid)]
        limit_file_size(processes, limit)
        deadline = time.monotonic() + DEADLINE_S
        while produce(producer, value := next(values)):  # until the disk is "full"
            acknowledged.append(value)
            assert time.monotonic() < deadline, "the store never failed a write"
        # The gateway knows the store failed: down, or restarted on the still full disk (0.1 s
        # later in the gateway's process), it is out of sync, so produce is refused at once.
        deadline = time.monotonic() + DEADLINE_S
        while "event='store_storage_failed'" not in gateway.log_path.read_text():
            assert time.monotonic() < deadline, "the gateway never saw the store fail"
            time.sleep(0.05)
        for client, error in ((producer, NotEnoughReplicasError), (single, KafkaStorageError)):
            sent = time.monotonic()
            with pytest.raises(error):
                client.send("faults", next(values), partition=0).get(DEADLINE_S)
            assert time.monotonic() - sent < ANSWER_S
        limit_file_size([gateway.process.pid], resource.RLIM_INFINITY)  # stores restarted from now on
        limit_file_size(children(gateway.process.pid), resource.RLIM_INFINITY)  # a store started before
        deadline = time.monotonic() + DEADLINE_S
        while not produce(producer, value := next(values)):  # the store is back
            assert time.monotonic() < deadline, "writing did not resume"
        acknowledged.append(value)
        for _ in range(20):
            acknowledged.append(next(values))
            assert produce(producer, acknowledged[-1])
        stored = read_back(gateway.bootstrap, acknowledged[-1])
    finally:
        producer.close(5)
        single.close(5)
        gateway.stop()
    assert len(set(stored)) == len(stored)  # nothing twice
    assert [value for value in stored if value in set(acknowledged)] == acknowledged  # all acknowledged, in order
    log = gateway.log_path.read_text()
    assert "event='storage_failed'" in log and "errno='EFBIG'" in log
    assert "event='store_storage_failed'" in log  # the gateway restarted it
    assert "event='store_out_of_sync_until_written'" in log
