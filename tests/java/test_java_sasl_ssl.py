"""The Java client over SASL_SSL: SCRAM-SHA-256 and PLAIN through the TLS stream (TlsClient.java)."""

from __future__ import annotations

import subprocess

import pytest

from tests.gateway.sasl_setup import credentials
from tests.gateway.test_sasl_ssl import sasl_ssl_gateway  # noqa: F401  (the fixture)
from tests.gateway.test_tls import certificates  # noqa: F401  (the fixture)
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, pytestmark  # noqa: F401
from tests.java.test_java_tls import classpath  # noqa: F401  (the fixture)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_the_java_client_authenticates_over_tls(sasl_ssl_gateway, certificates, classpath, mechanism):  # noqa: F811
    user, password = credentials(mechanism)
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "TlsClient",
                          f"localhost:{sasl_ssl_gateway.sasl_ssl_port}", str(certificates.ca), "-",
                          f"java-sasl-ssl-{mechanism}".lower(), f"{mechanism}:{user}:{password}"],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "tls: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr[-3000:]}\ngateway log:\n{sasl_ssl_gateway.log_tail()}"
