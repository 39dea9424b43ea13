"""glibc's allocator, set to keep freed memory for a server process's next buffers.

A store reads a batch into a new buffer of its size (often about 1 MB) and
frees it once ZeroMQ has sent it; the gateway does the same with requests and
store answers. With glibc's defaults, buffers of that size were mapped afresh,
or their memory handed back to the kernel as soon as more than twice that size
lay free, so every byte read landed on a page the kernel had to fault in and
zero: 144,000 page faults a second in a store serving 530 MB/s of catch-up
reads, a third of its CPU. Below MMAP_THRESHOLD_BYTES buffers come from the
heap, and up to TRIM_THRESHOLD_BYTES of free memory at a heap's top is kept.
Elsewhere than glibc (mallopt missing), nothing changes.
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest: a batch or a request above it is mapped on its own
TRIM_THRESHOLD_BYTES = 64 << 20  # free memory kept at the top of each heap, at most


def keep_freed_memory() -> bool:
    """Set the thresholds; whether the allocator took them."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                 TRIM_THRESHOLD_BYTES))
