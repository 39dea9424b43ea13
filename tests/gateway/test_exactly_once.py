"""Exactly-once processing: a consume-transform-produce loop SIGKILLed and restarted mid-stream."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.gateway.groups import ROOT, wait_until
from tests.gateway.txn_loop import transform

LOOP_RECORDS, LOOP_PARTITIONS = 100_000, 4
# Where each kill lands: with a transaction's output written, with its offsets sent too, or at a
# random moment after a commit (often inside the next transaction or its commit).
KILL_POINTS = ["produced", "offsets", "anywhere", "anywhere"]
PROGRESS_TIMEOUT_S = 120
# At most this long after a commit: about a transaction's time (5000 records) on a fast machine.
ANYWHERE_DELAY_S = 0.25


class TransactionLoop:
    """`tests.gateway.txn_loop` as a child process that a test kills and restarts."""

    def __init__(self, log_path, *arguments: str):
        self.log_path, self.arguments = log_path, arguments
        self.process: subprocess.Popen | None = None
        self.kills = 0

    def start(self, *parking: str) -> None:
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.gateway.txn_loop", *self.arguments, *parking],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def said(self, key: str) -> list:
        """The values of `key` in the loop's JSON lines (client logs are interleaved), oldest first."""
        lines = [line for line in self.log_path.read_text().splitlines() if line.startswith("{")]
        return [event[key] for event in map(json.loads, lines) if key in event]

    def committed(self) -> int:
        return max(self.said("committed"), default=0)

    def wait_for(self, condition, what: str) -> None:
        """Until `condition()`; fails at once if the loop exits (it should run until killed)."""
        def met() -> bool:
            assert self.process.poll() is None, f"the loop exited:\n{self.log_path.read_text()[-3000:]}"
            return condition()

        wait_until(met, PROGRESS_TIMEOUT_S, what)

    def kill(self) -> None:
        assert self.process.poll() is None, f"the loop finished before its kill:\n{self.log_path.read_text()[-3000:]}"
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.kills += 1


def kill_plan(chance: random.Random) -> list[tuple[int, str]]:
    """(committed records to wait for, kill point) per kill, in order."""
    # The last kill leaves a third of the input: a loop killed "anywhere" must not have finished meanwhile.
    thresholds = sorted(chance.sample(range(LOOP_RECORDS // 20, LOOP_RECORDS * 2 // 3), len(KILL_POINTS)))
    return list(zip(thresholds, chance.sample(KILL_POINTS, len(KILL_POINTS)), strict=True))


def parking(step: tuple[int, str] | None) -> tuple[str, ...]:
    """The loop's arguments that make it wait, to be killed, at the step's kill point."""
    if step is None or step[1] == "anywhere":
        return ()
    threshold, point = step
    return point, str(threshold)


def kill_at(loop: TransactionLoop, step: tuple[int, str], chance: random.Random) -> None:
    threshold, point = step
    if point == "anywhere":
        loop.wait_for(lambda: loop.committed() >= threshold, f"{threshold} records committed")
        time.sleep(chance.uniform(0, ANYWHERE_DELAY_S))
    else:
        parked = len(loop.said("parked"))
        loop.wait_for(lambda: len(loop.said("parked")) > parked, f"the loop parked at {point}")
    loop.kill()


def test_consume_transform_produce_is_exactly_once_across_kills(shared_gateway, tmp_path):
    """The loop is SIGKILLed with a transaction half done (output written; offsets sent)
    and at random moments, then restarted; the read_committed output is each input
    transformed, once, in per-partition order."""
    bootstrap, source, target = shared_gateway.bootstrap, "eos-in", "eos-out"
    everything = list(range(LOOP_PARTITIONS))
    create_topic(bootstrap, source, partitions=LOOP_PARTITIONS)
    create_topic(bootstrap, target, partitions=LOOP_PARTITIONS)
    sent = [Sent(f"{n % LOOP_PARTITIONS}-{n:06}".encode(), key=f"{n}".encode(), partition=n % LOOP_PARTITIONS)
            for n in range(LOOP_RECORDS)]
    confluent_produce(bootstrap, source, sent, **{"linger.ms": 20})
    seed = random.randrange(1 << 32)
    chance = random.Random(seed)
    plan = kill_plan(chance)
    loop = TransactionLoop(tmp_path / "loop.log", bootstrap, source, target, "eos", str(LOOP_RECORDS))
    loop.start(*parking(plan[0]))
    try:
        for step, next_step in zip(plan, [*plan[1:], None], strict=True):
            kill_at(loop, step, chance)
            loop.start(*parking(next_step))
        assert loop.process.wait(PROGRESS_TIMEOUT_S) == 0, loop.log_path.read_text()[-3000:]
    finally:
        if loop.process.poll() is None:
            loop.kill()
    assert loop.kills == len(KILL_POINTS), f"seed {seed}"
    got = confluent_consume(bootstrap, target, everything, LOOP_RECORDS, **{"isolation.level": "read_committed"})
    for partition in everything:
        expected = [(s.key, transform(s.value)) for s in sent if s.partition == partition]
        assert [(m.key, m.value) for m in got if m.partition == partition] == expected, f"seed {seed}"
    written = confluent_consume(bootstrap, target, everything, LOOP_RECORDS + 1,
                                **{"isolation.level": "read_uncommitted"})
    assert len(written) > LOOP_RECORDS, "no kill left output behind to abort"
