"""Faults injected on purpose, so that tests can watch clients recover.

Off unless the environment asks: GATEWAY_DROP_PRODUCE_RESPONSE_EVERY=n makes
every n-th answered produce close its connection instead of answering,
after the batches were appended, as a lost response would. The client
retries them, and idempotence must answer the retries as duplicates.
"""

from __future__ import annotations

import itertools
import os

DROP_EVERY = int(os.environ.get("GATEWAY_DROP_PRODUCE_RESPONSE_EVERY", "0"))
_produce_answers = itertools.count(1)


def drop_produce_response() -> bool:
    return DROP_EVERY > 0 and next(_produce_answers) % DROP_EVERY == 0
