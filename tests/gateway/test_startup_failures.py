"""A gateway that cannot start says why in one line and exits, fast; signals always end it."""

import contextlib
import os
import signal
import socket
import subprocess
import time

import pytest

from tests.gateway.server import GatewayProcess, children

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
        while not listening(waiting.port):  # it binds its port first, then waits for the mesh
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(FAIL_WITHIN_S) == 0
    finally:
        process.kill()


def test_a_data_directory_that_cannot_be_written_is_named(tmp_path):
    """Not a directory: a test runs as root as often as not, and root may write any directory."""
    a_file = tmp_path / "data"
    a_file.write_text("")
    failure = failed_start(GatewayProcess(a_file))
    assert f"log.dirs {a_file} is not a directory" in failure and "give a directory this user may write" in failure


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def kill_stores(process: subprocess.Popen) -> None:
    """SIGKILL the stores `process` runs now."""
    for pid in children(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.02)


def kill_stores_until_exit(process: subprocess.Popen, timeout: float) -> int:
    """SIGKILL every store `process` starts, as soon as it appears, until `process` ends; its exit code."""
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        assert time.monotonic() < deadline, "the gateway did not end"
        kill_stores(process)
    return process.returncode


def test_a_store_that_keeps_dying_at_start_stops_the_gateway(tmp_path):
    server = GatewayProcess(tmp_path / "gateway")
    server.data_dir.mkdir(parents=True)
    with open(server.log_path, "wb") as log:
        process = subprocess.Popen(server.command(), stdout=log, stderr=subprocess.STDOUT)
    try:
        assert kill_stores_until_exit(process, timeout=60) == 1
        failures = [line for line in server.log_path.read_text().splitlines() if "event='gateway_failed'" in line]
        assert len(failures) == 1 and "embedded store 0" in failures[0] and "exited 5 times in a row" in failures[0]
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("serving", [True, False], ids=["serving", "starting"])
def test_a_signal_ends_the_gateway_while_its_store_is_restarted(tmp_path, signum, serving):
    server = GatewayProcess(tmp_path / "gateway")
    if serving:
        server.start()
    else:
        server.spawn()
    try:
        deadline = time.monotonic() + 30
        while "event='store_exited'" not in server.log_path.read_text():  # it is being restarted
            assert time.monotonic() < deadline and server.process.poll() is None, server.log_tail()
            kill_stores(server.process)
        os.kill(server.process.pid, signum)
        assert server.process.wait(FAIL_WITHIN_S) == 0, server.log_tail()
    finally:
        server.stop()
