"""The Java client against the real gateway as against a Kafka broker without client telemetry (KIP-714).

Telemetry.java is compiled as Conformance.java is and run with its log in
log4j (the slf4j binding and log4j from PySpark's jars: pyflink ships no
binding), at INFO and the telemetry reporter's DEBUG, on stderr.
"""

from __future__ import annotations

import subprocess
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, classpath_of
from tests.java.test_java_conformance import pytestmark as java_marks

# kafka-clients 3.9 calls slf4j 1.7's API, which slf4j 2 keeps.
LOG_JARS = ("slf4j-api-2", "log4j-slf4j2-impl-", "log4j-api-", "log4j-core-")
LOG_CONFIG = """\
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %level %logger %msg%n
rootLogger.level = INFO
rootLogger.appenderRef.err.ref = err
logger.telemetry.name = org.apache.kafka.common.telemetry
logger.telemetry.level = DEBUG
"""
REPORTER = "org.apache.kafka.common.telemetry.internals.ClientTelemetryReporter"
REGISTERED = "Client telemetry registered"  # the reporter's line once it holds a subscription
# The reporter's first request, which the client does not send: the node does not list the API.
NOT_SENT = [f"DEBUG {REPORTER} The broker generated an error for the get telemetry network API request",
            "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support "
            "GET_TELEMETRY_SUBSCRIPTIONS"]
ADMIN_REFUSED = ("ERROR org.apache.kafka.clients.admin.KafkaAdminClient [AdminClient clientId=adminclient-1] "
                 "Error occurred while fetching client instance id")


def log_jars() -> list[str] | None:
    try:
        jars = Path(distribution("pyspark").locate_file("pyspark/jars"))
    except PackageNotFoundError:
        return None
    return [str(next(jars.glob(f"{prefix}*.jar"))) for prefix in LOG_JARS]


pytestmark = [*java_marks, pytest.mark.skipif(log_jars() is None, reason="pip install pyspark for log4j's jars")]


def test_java_clients_get_no_telemetry(gateway, tmp_path):
    # pyflink's slf4j-api 1.7 gives way to PySpark's slf4j 2, which finds the log4j binding.
    classpath = [entry for entry in classpath_of("Telemetry.java", tmp_path / "classes").split(":")
                 if Path(entry).name != "slf4j-api.jar"]
    config = tmp_path / "log4j2.properties"
    config.write_text(LOG_CONFIG)
    run = subprocess.run(["java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={config}",
                          "-cp", ":".join([*classpath, *log_jars()]), "Telemetry", gateway.bootstrap],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    report = f"{run.stdout}\n{run.stderr}\ngateway log:\n{gateway.log_tail()}"
    log = run.stderr.splitlines()

    assert run.returncode == 0 and "telemetry: ok" in run.stdout, report
    assert any(line.startswith("INFO org.apache.kafka.clients.producer.ProducerConfig") for line in log), report
    assert not [line for line in log if REGISTERED in line], report
    # The producer's reporter tries once its node is ready, so before the produce is answered.
    assert any(log[i:i + 2] == NOT_SENT for i in range(len(log))), report
    assert [line for line in log if line.startswith(("WARN", "ERROR"))] == [ADMIN_REFUSED], report
