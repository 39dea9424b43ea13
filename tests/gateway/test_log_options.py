"""Logs an operator can use: the format and level asked, --version, and a bug logged with its traceback."""

import json
import subprocess
import sys

import pytest
import trio
from structlog.testing import capture_logs

from gateway.server.answers import CloseConnection
from gateway.server.dispatch import Dispatcher, Route
from protocol.kafka import encode_request
from protocol.kafka.apis import by_name
from protocol.kafka.schema import Versions
from tests.gateway.server import GatewayProcess

API_VERSIONS = by_name("ApiVersions")


def logged_lines(tmp_path, *options: str) -> list[str]:
    """The log of a gateway (and its store) run with `options`, from start to a clean stop."""
    gateway = GatewayProcess(tmp_path / "data", *options).start()
    assert gateway.stop() == 0
    return [line for line in gateway.log_path.read_text().splitlines() if line.strip()]


def test_version_is_printed():
    done = subprocess.run([sys.executable, "-m", "gateway", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("dafka-gateway ") and done.stdout.split()[1][0].isdigit()


def test_json_format_gives_one_json_event_a_line(tmp_path):
    events = [json.loads(line) for line in logged_lines(tmp_path, "--log-format", "json")]
    assert {"listening", "store_starting"} <= {event["event"] for event in events}
    assert all({"timestamp", "level"} <= event.keys() for event in events)


def test_level_leaves_out_what_is_below_it(tmp_path):
    lines = logged_lines(tmp_path, "--log-level", "warning")
    assert not [line for line in lines if "level='info'" in line]


async def _failing_handler(request, services):
    raise ZeroDivisionError("a bug")


async def test_a_handler_bug_is_logged_once_with_its_traceback_and_ends_the_connection():
    route = Route(API_VERSIONS, Versions(0, 3), _failing_handler)
    dispatcher = Dispatcher({API_VERSIONS.key: route}, services=None)
    request = encode_request(API_VERSIONS.key, 3, 7, "probe", API_VERSIONS.Request(
        client_software_name="probe", client_software_version="1"))
    with capture_logs() as logs, pytest.raises(CloseConnection, match="ZeroDivisionError"):
        await dispatcher.dispatch(bytes(request), connection=None)
    await trio.lowlevel.checkpoint()
    failures = [entry for entry in logs if entry["event"] == "handler_failed"]
    assert len(failures) == 1 and failures[0]["exc_info"] is True
    assert failures[0]["api"] == "ApiVersions" and failures[0]["version"] == 3


WRITER = """
import structlog
from gateway.logging_setup import configure_logging
from gateway.settings.table import LoggingSettings
configure_logging(LoggingSettings(log_format="json"))
for number in range(3000):
    structlog.get_logger().info("event", number=number, padding="x" * 200)
"""


def test_processes_that_share_a_log_file_never_split_each_others_lines(tmp_path):
    """The gateway and its embedded store write to one inherited stderr: each event goes out
    in one write, so that another's cannot land inside it."""
    with open(tmp_path / "shared.log", "ab") as shared:
        writers = [subprocess.Popen([sys.executable, "-c", WRITER], stderr=shared) for _ in range(2)]
        assert [writer.wait(60) for writer in writers] == [0, 0]
    events = [json.loads(line) for line in (tmp_path / "shared.log").read_text().splitlines()]
    assert len(events) == 6000
