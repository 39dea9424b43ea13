"""The fuzzing property tests, run long: Kafka request decoding, record batch
validation, Dafka and CHP message decoding.

The suite runs them briefly (hypothesis profile "ci"); here they run under the
"fuzz" profile of tests/conftest.py with --examples examples per test (per
parameter for the per-API tests, a tenth of it). Prints each target's time and
result; exits non-zero if a property failed (hypothesis prints the example).

    python bench/fuzz.py [--examples 5000] [--only records]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "kafka-requests": ["tests/protocol/kafka/test_codec_properties.py",
                       "-k", "random_bytes or random_request or mutated_request"],
    "records": ["tests/protocol/records/test_records_fuzz.py",
                "tests/protocol/records/test_batch_validation.py", "-k", "mutated or random or damage or flips or compiled"],
    "produce-checks": ["tests/gateway/unit/test_batch_checks.py", "-k", "damaged"],
    "dafka": ["tests/protocol/dafka/test_messages.py", "tests/protocol/dafka/test_beacon.py",
              "-k", "mutated or random"],
    "chp": ["tests/chp/test_chp_codec.py", "-k", "fuzzed"],
}


def run(name: str, arguments: list[str], examples: int) -> bool:
    environment = {**os.environ, "DAFKA_HYPOTHESIS_PROFILE": "fuzz", "DAFKA_FUZZ_EXAMPLES": str(examples)}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
                            cwd=ROOT, env=environment, capture_output=True, text=True)
    summary = (result.stdout.strip().splitlines() or ["no output"])[-1]
    print(f"{name:16s} {time.monotonic() - started:8.1f} s  {summary}", flush=True)
    if result.returncode != 0:
        print(result.stdout[-6000:], result.stderr[-2000:], sep="\n")
    return result.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=5000, help="hypothesis examples per test")
    parser.add_argument("--only", choices=sorted(TARGETS), action="append", help="run only these targets")
    arguments = parser.parse_args()
    print(f"{arguments.examples} examples per property test (hypothesis profile 'fuzz')")
    results = [run(name, TARGETS[name], arguments.examples) for name in arguments.only or TARGETS]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
