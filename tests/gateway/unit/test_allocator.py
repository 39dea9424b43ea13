"""keep_freed_memory: buffers of a batch's size reuse freed memory instead of faulting in new pages."""

import subprocess
import sys

# Sixteen 1 MB buffers taken and freed together, forty times, as a store's read of
# 16 MB is sent and dropped: the page faults that costs, printed.
ROUNDS = """
import resource, sys
from gateway.allocator import keep_freed_memory
if sys.argv[1] == "tuned":
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    buffers = [bytearray(1 << 20) for _ in range(16)]
    del buffers
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_freed_buffers_are_reused_without_page_faults():
    default, tuned = page_faults("default"), page_faults("tuned")
    assert default > 40 * 16 * 256 // 2  # each round faulted most of its 16 MB in again
    assert tuned < 16 * 256 * 2  # the first round's pages, about: later rounds reuse them
