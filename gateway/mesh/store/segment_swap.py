"""Replacing a sealed segment by its cleaned copy, so that a crash leaves one or the other.

The cleaner writes the copy (log and index, both fsynced) in the partition's
CLEANING_DIRECTORY. The swap renames the index in as `<base>.idx.swap`, then
the log as `<base>.log.swap`: once the log's swap file exists the copy is
committed. Both then take the segment's own names. `finish_swaps`, run before
a partition opens, completes a committed swap and forgets one that was not.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gateway.mesh.store.handles import fsync_directory

CLEANING_DIRECTORY = ".cleaning"
SWAP_SUFFIX = ".swap"


def swap_in(directory: Path, log_name: str, index_name: str) -> None:
    """Put the cleaned copy of segment files `log_name` and `index_name` in their place."""
    cleaning = directory / CLEANING_DIRECTORY
    os.rename(cleaning / index_name, directory / (index_name + SWAP_SUFFIX))
    fsync_directory(str(directory))
    os.rename(cleaning / log_name, directory / (log_name + SWAP_SUFFIX))
    fsync_directory(str(directory))  # committed
    _finish(directory, log_name, index_name)


def finish_swaps(directory: Path) -> None:
    for name in os.listdir(directory):
        if name.endswith(".log" + SWAP_SUFFIX):
            log_name = name.removesuffix(SWAP_SUFFIX)
            _finish(directory, log_name, log_name.removesuffix(".log") + ".idx")
    for name in os.listdir(directory):
        if name.endswith(".idx" + SWAP_SUFFIX):  # its log never came: the old segment stays
            os.unlink(directory / name)
    shutil.rmtree(directory / CLEANING_DIRECTORY, ignore_errors=True)


def _finish(directory: Path, log_name: str, index_name: str) -> None:
    index_swap = directory / (index_name + SWAP_SUFFIX)
    if index_swap.exists():
        os.rename(index_swap, directory / index_name)
    os.rename(directory / (log_name + SWAP_SUFFIX), directory / log_name)
    fsync_directory(str(directory))
