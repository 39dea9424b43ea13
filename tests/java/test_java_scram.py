"""The Java client over SASL_PLAINTEXT with SCRAM-SHA-512, re-authenticating (KIP-368); Scram.java is compiled
as Conformance.java is."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gateway.sasl_setup import sasl_gateway
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, client_jars, pytestmark  # noqa: F401

SOURCE = Path(__file__).with_name("Scram.java")


def test_java_client_authenticates_with_scram_and_re_authenticates(tmp_path):
    # A 3 s session: the client re-authenticates between 85% and 95% of it, at its next request; with
    # 1 s, that left 50-150 ms, which a loaded machine once missed (the session expired first).
    server = sasl_gateway(tmp_path / "gateway", "--connections-max-reauth-ms", "3000")
    try:
        jars = [str(jar) for jar in client_jars()]
        subprocess.run(["javac", "-d", str(tmp_path), "-cp", jars[0], str(SOURCE)], check=True)
        run = subprocess.run(["java", *JVM_OPTIONS, "-cp", ":".join([str(tmp_path), *jars]), "Scram",
                              server.bootstrap, f"127.0.0.1:{server.sasl_port}"],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert run.returncode == 0 and "scram: ok" in run.stdout, \
            f"{run.stdout}\n{run.stderr}\ngateway log:\n{server.log_tail()}"
        assert "session expired" not in server.log_path.read_text()
    finally:
        server.stop()
