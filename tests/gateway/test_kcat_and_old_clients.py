"""kcat (librdkafka from Debian) and kafka-python pinned to Kafka 0.9 / 0.10."""

import shutil
import subprocess

import pytest

from tests.gateway.clients import Sent, kafka_python_consume, kafka_python_produce

kcat = shutil.which("kcat")
needs_kcat = pytest.mark.skipif(kcat is None, reason="kcat is not installed (apt-get install kcat)")


def run_kcat(*arguments: str, stdin: bytes | None = None) -> str:
    done = subprocess.run([kcat, *arguments], input=stdin, capture_output=True, timeout=60, check=True)
    return done.stdout.decode()


@needs_kcat
def test_kcat_produce_list_consume(shared_gateway):
    broker = ["-b", shared_gateway.bootstrap]
    lines = [f"line {i}" for i in range(100)]
    run_kcat(*broker, "-P", "-t", "kcat-topic", "-K:", stdin="\n".join(f"k{i}:{v}" for i, v in enumerate(lines)).encode())
    listing = run_kcat(*broker, "-L", "-t", "kcat-topic")
    assert 'topic "kcat-topic" with 1 partitions' in listing
    assert "leader 0" in listing
    out = run_kcat(*broker, "-C", "-t", "kcat-topic", "-o", "beginning", "-e", "-f", "%k=%s@%o\n")
    assert out.splitlines() == [f"k{i}={v}@{i}" for i, v in enumerate(lines)]


@pytest.mark.parametrize("api_version", [(0, 10), (0, 9)])
def test_old_kafka_python_produces_and_fetches(shared_gateway, api_version):
    topic = f"old-client-{api_version[1]}"
    sent = [Sent(value=f"value {i}".encode(), key=None if i % 2 else f"k{i}".encode()) for i in range(60)]
    for codec in (None, "gzip"):
        kafka_python_produce(shared_gateway.bootstrap, topic, sent[:30] if codec is None else sent[30:],
                             api_version=api_version, compression_type=codec)
    got = kafka_python_consume(shared_gateway.bootstrap, topic, [0], len(sent), api_version=api_version)
    assert [(g.key, g.value) for g in got] == [(s.key, s.value) for s in sent]
    assert [g.offset for g in got] == list(range(len(sent)))
