"""The Java Admin's describeFeatures and updateFeatures (what kafka-features.sh calls) and a KIP-848 consumer
refused while group.version is 0, against the real gateway; Features.java is compiled as Conformance.java is."""

from __future__ import annotations

import subprocess

from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, classpath_of, pytestmark  # noqa: F401


def test_java_admin_describes_and_updates_features(gateway, tmp_path):
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath_of("Features.java", tmp_path), "Features",
                          gateway.bootstrap], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0 and "features: ok" in run.stdout, \
        f"{run.stdout}\n{run.stderr}\ngateway log:\n{gateway.log_tail()}"
