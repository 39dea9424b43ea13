"""An exclusive lock on a data directory: two processes writing the same files would corrupt them."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".lock"


class DirectoryInUse(RuntimeError):
    """Another process holds the directory's lock."""


def lock_directory(directory: Path) -> int:
    """Take the directory's lock: held until the returned descriptor is closed, or the process ends."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DirectoryInUse(f"{directory} is in use by another process") from None
    return fd


@contextmanager
def locked_directory(directory: Path) -> Iterator[None]:
    fd = lock_directory(directory)
    try:
        yield
    finally:
        os.close(fd)
