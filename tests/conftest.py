"""Shared test settings.

Hypothesis runs the "ci" profile: few examples, fast. bench/fuzz.py runs the
same property tests longer through the "fuzz" profile:
DAFKA_HYPOTHESIS_PROFILE=fuzz, DAFKA_FUZZ_EXAMPLES examples per test.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", settings.get_profile("ci"), max_examples=int(os.environ.get("DAFKA_FUZZ_EXAMPLES", "5000"))
)
settings.load_profile(os.environ.get("DAFKA_HYPOTHESIS_PROFILE", "ci"))
