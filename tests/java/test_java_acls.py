"""The Java Admin's createAcls, describeAcls and deleteAcls (what kafka-acls.sh calls), and a Java producer
refused by a DENY, against the real gateway with an authorizer; Acls.java is compiled as Conformance.java is."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gateway.server import GatewayProcess
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, client_jars, pytestmark  # noqa: F401

SOURCE = Path(__file__).with_name("Acls.java")


def test_java_admin_manages_acls_that_refuse_a_producer(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--authorizer-class-name",
                            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                            "--allow-everyone-if-no-acl-found", "true").start()
    try:
        jars = [str(jar) for jar in client_jars()]
        subprocess.run(["javac", "-d", str(tmp_path), "-cp", jars[0], str(SOURCE)], check=True)
        run = subprocess.run(["java", *JVM_OPTIONS, "-cp", ":".join([str(tmp_path), *jars]), "Acls",
                              server.bootstrap], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert run.returncode == 0 and "acls: ok" in run.stdout, \
            f"{run.stdout}\n{run.stderr}\ngateway log:\n{server.log_tail()}"
    finally:
        server.stop()
