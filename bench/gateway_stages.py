"""Where a produce's time goes inside the gateway, read from its /metrics around a run.

A client sees a record's whole delivery time; the gateway's histograms split
off its own part: from a Produce request's arrival to its answer, and within
that the wait for the stores' acknowledgement (their receipt, write and
fsync, and the ACK's way back). The rest is the client, the network and the
request's time queued before the gateway read it. Means over the run. For a
consume, the same histogram gives a Fetch's time in the gateway.
"""

from __future__ import annotations

import re
import urllib.request

REQUESTS = "gateway: request arrival to answer"  # its count is the Produce requests answered
STAGES = {
    REQUESTS: 'dafka_gateway_request_seconds_{}{{api="Produce"}}',
    "gateway: of which waiting for the stores": "dafka_gateway_produce_store_wait_seconds_{}",
}
# A consume's: a Fetch from its arrival to its answer (a long poll's wait included)
FETCH_STAGES = {"gateway: Fetch arrival to answer": 'dafka_gateway_request_seconds_{}{{api="Fetch"}}'}


def snapshot(metrics_url: str, stages: dict[str, str] = STAGES) -> dict[str, tuple[float, float]]:
    """stage -> (seconds summed, count) so far."""
    text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    return {stage: (_value(text, series.format("sum")), _value(text, series.format("count")))
            for stage, series in stages.items()}


def mean_ms(before: dict, after: dict) -> dict[str, float | None]:
    """stage -> mean milliseconds between two snapshots of the same stages (None: nothing observed)."""
    means = {}
    for stage in before:
        seconds, count = (a - b for a, b in zip(after[stage], before[stage], strict=True))
        means[stage] = seconds / count * 1000 if count else None
    return means


def _value(text: str, series: str) -> float:
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0
