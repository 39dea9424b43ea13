"""pytest plugin: a real Kafka-compatible broker for an application's tests, without Docker.

Installed with the package (entry point `pytest11`), it gives the session-scoped
fixture `kafka_bootstrap`: "127.0.0.1:PORT" of a gateway with its embedded store,
started on free ports with a temporary data directory, and stopped and removed
at the end of the session. Each pytest-xdist worker gets a broker of its own.
Groups rebalance without Kafka's initial 3 s delay (group.initial.rebalance.delay.ms=0,
as test setups of Kafka usually have it), so a consumer's first poll comes at once.
The store runs in the gateway's process (embedded.stores.in.process): tests wait on
one record at a time more than they stream, and that is where it answers sooner.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.testing.broker_process import BrokerProcess

TEST_OPTIONS = ("--group-initial-rebalance-delay-ms", "0", "--embedded-stores-in-process", "true")


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a Kafka-compatible broker, for the whole test session."""
    with tempfile.TemporaryDirectory(prefix="kafka-bootstrap-") as directory:
        broker = BrokerProcess(Path(directory) / "data", *TEST_OPTIONS, log_path=Path(directory) / "gateway.log")
        try:
            broker.start()
            yield broker.bootstrap
        finally:
            if broker.process is not None:
                broker.stop()
