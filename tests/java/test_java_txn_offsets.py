"""The Java client's sendOffsetsToTransaction against a cluster of three gateways where one
coordinates the group and another the transactional id (TxnOffsets.java)."""

from __future__ import annotations

import subprocess

from tests.gateway.test_cluster import gateway_cluster
from tests.gateway.test_cluster_txn_offsets import (
    INPUT,
    OUTPUT,
    assert_ended_at_the_end,
    cluster_with_topics,
    input_records,
    read_committed_output,
    split_coordinators,
    transform,
)
from tests.java.test_java_conformance import JVM_OPTIONS, RUN_TIMEOUT_S, classpath_of, pytestmark  # noqa: F401

SOURCE = "TxnOffsets.java"


def test_java_consume_transform_produce_commits_offsets_with_its_transactions(tmp_path):
    """Every third transaction aborted: the group ends at the end of its input, and each input
    record is in the committed output once."""
    classpath = classpath_of(SOURCE, tmp_path / "classes")
    with gateway_cluster(tmp_path) as gateways:
        cluster_with_topics(gateways)
        group, transactional_id = split_coordinators(gateways[0], group_node=3, transaction_node=2)
        values = input_records(gateways[0], 600)
        run = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "TxnOffsets", gateways[0].bootstrap, INPUT,
                              OUTPUT, group, transactional_id, str(len(values))],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-5000:]}"
        assert "aborted" in run.stdout
        assert_ended_at_the_end(gateways, group, len(values))
        assert sorted(read_committed_output(gateways[1], OUTPUT)) == sorted(map(transform, values))
