"""The Java client over SSL and mutual TLS with Kafka's PEM client settings; TlsClient.java is
compiled as Conformance.java is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.gateway.certificates import CLIENT_SUBJECT
from tests.gateway.test_connection_limits import wait_for
from tests.gateway.test_tls import log_end, opened_as
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, client_jars, pytestmark  # noqa: F401

SOURCE = Path(__file__).with_name("TlsClient.java")


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    jars = [str(jar) for jar in client_jars()]
    classes = tmp_path_factory.mktemp("java-tls-classes")
    subprocess.run(["javac", "-d", str(classes), "-cp", jars[0], str(SOURCE)], check=True)
    return ":".join([str(classes), *jars])


@pytest.mark.parametrize("with_certificate", [False, True], ids=["tls", "mtls"])
def test_the_java_client_produces_and_consumes_over_ssl(tls_gateway, certificates, classpath, with_certificate):
    keystore = str(certificates.client.keystore) if with_certificate else "-"
    since = log_end(tls_gateway)
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "TlsClient", f"localhost:{tls_gateway.ssl_port}",
                          str(certificates.ca), keystore, f"java-tls-{with_certificate}"],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "tls: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr[-3000:]}\ngateway log:\n{tls_gateway.log_tail()}"
    if with_certificate:
        wait_for(lambda: opened_as(tls_gateway, f"User:{CLIENT_SUBJECT}", since), "a connection opened as the client's subject")
