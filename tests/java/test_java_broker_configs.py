"""Dynamic broker configs and broker loggers through the Java Admin (what kafka-configs.sh --entity-type brokers
and broker-loggers sends), against the real gateway; BrokerConfigs.java is compiled as Conformance.java is."""

from __future__ import annotations

import subprocess

from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, classpath_of, pytestmark  # noqa: F401


def test_java_admin_changes_the_cluster_default_and_a_brokers_configs(gateway, tmp_path):
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath_of("BrokerConfigs.java", tmp_path), "BrokerConfigs",
                          gateway.bootstrap], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "broker configs: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr}\ngateway log:\n{gateway.log_tail()}"
