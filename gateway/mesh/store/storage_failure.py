"""Disk faults at a store: which errors mean its storage failed, and what to tell the operator.

A store whose write or sync failed cuts its log back to the last durable
point, acknowledges nothing more and exits with STORAGE_FAILED; the gateway
restarts it (with a capped backoff) until the disk takes writes again.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

STORAGE_FAILED = 4  # the exit code of a store whose disk failed: restarting it may help later

ACTIONS = {
    errno.ENOSPC: "free space on its file system; the store is restarted until writes succeed",
    errno.EDQUOT: "raise the disk quota or free space; the store is restarted until writes succeed",
    errno.EFBIG: "raise the file size limit (ulimit -f) or lower store.segment.bytes; "
                 "the store is restarted until writes succeed",
    errno.EIO: "check the disk (dmesg, SMART) and replace it if failing; the store is restarted until "
               "writes succeed",
}
OTHER_ACTION = "check the data directory's file system; the store is restarted until writes succeed"


class StorageFailed(Exception):
    """A write or sync of the store's log failed: nothing since the last good sync is kept."""

    def __init__(self, error: OSError):
        self.path = str(error.filename)
        self.errno_name = errno.errorcode.get(error.errno, str(error.errno))
        self.action = ACTIONS.get(error.errno, OTHER_ACTION)
        self.strerror = error.strerror
        super().__init__(f"{self.errno_name} ({error.strerror}) on {self.path}")


def is_storage_error(error: OSError) -> bool:
    """Errors a disk gives when it is full or failing, as opposed to a directory that is unusable."""
    return error.errno in ACTIONS


@contextmanager
def naming(path: str) -> Iterator[None]:
    """Calls on a descriptor raise OSError without a file name: give it the file's path."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            error.filename = path
        raise
