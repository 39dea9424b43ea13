"""The pytest plugin the package installs: an application's tests get a real broker."""

import re
import socket

pytest_plugins = ["pytester"]

APPLICATION_TEST = '''
from confluent_kafka import Consumer, Producer


def test_orders_round_trip(kafka_bootstrap):
    print("BOOTSTRAP", kafka_bootstrap)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(3):
        producer.produce("orders", b"order %d" % n)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "app",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    got = []
    while len(got) < 3:
        message = consumer.poll(30)
        assert message is not None and message.error() is None
        got.append(message.value())
    consumer.close()
    assert got == [b"order 0", b"order 1", b"order 2"]


def test_the_same_broker_serves_the_session(kafka_bootstrap):
    print("BOOTSTRAP", kafka_bootstrap)
'''


def test_an_application_test_produces_and_consumes_through_kafka_bootstrap(pytester):
    pytester.makepyfile(test_application=APPLICATION_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    bootstraps = set(re.findall(r"BOOTSTRAP (\S+)", result.stdout.str()))
    assert len(bootstraps) == 1  # one broker for the session
    host, port = bootstraps.pop().split(":")
    with socket.socket() as probe:  # stopped with the session: its port is free again
        assert probe.connect_ex((host, int(port))) != 0


def test_a_broker_that_cannot_start_fails_the_tests_with_its_log(pytester, monkeypatch):
    pytester.makepyfile(test_application="def test_needs_kafka(kafka_bootstrap):\n    pass\n")
    monkeypatch.setenv("DAFKA_NUM_PARTITIONS", "0")  # a setting the gateway refuses at start
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*gateway exited with 2*", "*num.partitions*"])
