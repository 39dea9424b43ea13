"""A gateway that cannot start says why in one line and exits, fast; signals always end it."""

import os
import signal
import subprocess
import time

import pytest

from tests.gateway.server import GatewayProcess

FAIL_WITHIN_S = 10.0


def failed_start(server: GatewayProcess) -> str:
    """Run the gateway to its end: it must fail within FAIL_WITHIN_S; its one failure line."""
    server.data_dir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run(server.command(), capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < FAIL_WITHIN_S, done.stderr
    assert done.returncode == 1, done.stderr
    failures = [line for line in done.stderr.splitlines() if "level='error'" in line]
    assert len(failures) >= 1 and "Traceback" not in done.stderr, done.stderr
    assert "event='gateway_failed'" in failures[-1]
    return failures[-1]


@pytest.fixture
def running(tmp_path):
    server = GatewayProcess(tmp_path / "first").start()
    yield server
    server.stop()


def test_a_port_in_use_is_named(running, tmp_path):
    second = GatewayProcess(tmp_path / "second")
    second.port = running.port
    assert f"cannot listen on PLAINTEXT://127.0.0.1:{running.port}: Address already in use" in failed_start(second)


def test_a_second_gateway_on_the_same_data_directory_is_refused(running):
    second = GatewayProcess(running.data_dir)
    assert f"log.dirs {running.data_dir} is in use by another gateway" in failed_start(second)


def test_a_directory_of_another_cluster_or_of_other_files_is_refused(running, tmp_path):
    other_cluster = GatewayProcess(running.data_dir, "--cluster-id", "elsewhere")
    running.stop()
    assert "belongs to cluster 'dafka-gateway', not 'elsewhere'" in failed_start(other_cluster)
    strangers = tmp_path / "kafka-logs"
    strangers.mkdir()
    (strangers / "__consumer_offsets-0").mkdir()
    assert "holds files that are not the gateway's (__consumer_offsets-0)" in failed_start(GatewayProcess(strangers))


def test_an_embedded_store_that_cannot_use_its_directory_stops_the_gateway(running):
    running.stop()
    (running.data_dir / "store-0" / "log").rename(running.data_dir / "store-0" / "moved")
    (running.data_dir / "store-0" / "log").write_text("not a directory")
    assert "embedded store 0 cannot use its data directory" in failed_start(GatewayProcess(running.data_dir))


def test_sigterm_ends_a_gateway_still_waiting_for_stores(tmp_path):
    waiting = GatewayProcess(tmp_path / "gateway", stores=0)
    waiting.data_dir.mkdir(parents=True)
    with open(waiting.log_path, "wb") as log:
        process = subprocess.Popen(waiting.command(), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "node_started" not in waiting.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(FAIL_WITHIN_S) == 0
    finally:
        process.kill()
