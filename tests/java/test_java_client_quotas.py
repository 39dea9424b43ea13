"""The Java Admin's alterClientQuotas and describeClientQuotas (what kafka-configs.sh
calls) against the real gateway; ClientQuotas.java is compiled as Conformance.java is."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, client_jars, pytestmark  # noqa: F401

SOURCE = Path(__file__).with_name("ClientQuotas.java")


def test_java_admin_sets_reads_and_removes_client_quotas(gateway, tmp_path):
    jars = [str(jar) for jar in client_jars()]
    subprocess.run(["javac", "-d", str(tmp_path), "-cp", jars[0], str(SOURCE)], check=True)
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", ":".join([str(tmp_path), *jars]), "ClientQuotas",
                          gateway.bootstrap], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "client quotas: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr}\ngateway log:\n{gateway.log_tail()}"
