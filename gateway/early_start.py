"""What the gateway's command does before it imports the rest of the gateway.

It claims log.dirs and starts the embedded stores as soon as its settings
are read: a store takes about as long to import itself and open its log as
the gateway takes to import, and on two cores the two then overlap instead
of following each other. Only light modules are imported here for that
reason. The stores inherit the open files limit, so it is raised first.
"""

from __future__ import annotations

import resource
import subprocess
from typing import NamedTuple

import structlog

from gateway.data_directory import claim_data_directory
from gateway.settings.table import Settings
from gateway.store_processes import start_stores

log = structlog.get_logger()


class EarlyStart(NamedTuple):
    lock: int  # the descriptor holding log.dirs' lock
    stores: list[subprocess.Popen]  # embedded store n's first process


def start_early(settings: Settings) -> EarlyStart:
    """log.dirs claimed (StartupError if it cannot be), the limit raised, the embedded stores started."""
    lock = claim_data_directory(settings.broker)
    _raise_open_files_limit()
    return EarlyStart(lock, start_stores(settings))


def _raise_open_files_limit() -> None:
    """Every client connection takes a file descriptor: allow as many as the hard limit does."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # e.g. an unlimited hard limit above what the kernel allows
        log.warning("open_files_limit_kept", soft=soft, hard=hard, error=str(exc))
        return
    log.info("open_files_limit", soft=soft, raised_to=hard, hard=hard)
