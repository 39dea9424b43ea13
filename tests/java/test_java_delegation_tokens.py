"""Delegation tokens with the Java client (kafka-clients 3.9.1): its Admin API creates, describes, renews and
expires them, its producers and consumers authenticate with one; DelegationTokens.java is compiled as
Conformance.java is. Neither librdkafka nor kafka-python nor aiokafka has token APIs or SCRAM's tokenauth."""

from __future__ import annotations

import subprocess

from tests.gateway.sasl_setup import sasl_gateway
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, classpath_of, pytestmark  # noqa: F401

SECRET = ("--delegation-token-secret-key", "a-secret-the-gateways-share")


def run_java(classpath: str, server, *args: str) -> str:
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "DelegationTokens", *args],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "tokens: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr[-3000:]}\ngateway log:\n{server.log_tail()}"
    return run.stdout


def test_tokens_are_created_used_renewed_expired_and_kept_across_a_restart(tmp_path):
    classpath = classpath_of("DelegationTokens.java", tmp_path / "classes")
    server = sasl_gateway(tmp_path / "gateway", *SECRET, "--delegation-token-expiry-check-interval-ms", "500")
    try:
        sasl = f"127.0.0.1:{server.sasl_port}"
        out = run_java(classpath, server, "lifecycle", server.bootstrap, sasl)
        (token_id, hmac), = [line.split()[1:] for line in out.splitlines() if line.startswith("token ")]
        server.stop()
        server.start()
        run_java(classpath, server, "restarted", sasl, token_id, hmac)
        assert hmac not in server.log_path.read_text() and SECRET[1] not in server.log_path.read_text()
    finally:
        server.stop()
    stored = b"".join(path.read_bytes() for path in (tmp_path / "gateway").rglob("*") if path.is_file())
    assert token_id.encode() in stored and hmac.encode() not in stored and SECRET[1].encode() not in stored


def test_without_the_secret_key_token_requests_are_refused(tmp_path):
    classpath = classpath_of("DelegationTokens.java", tmp_path / "classes")
    server = sasl_gateway(tmp_path / "gateway")
    try:
        run_java(classpath, server, "disabled", f"127.0.0.1:{server.sasl_port}")
    finally:
        server.stop()
