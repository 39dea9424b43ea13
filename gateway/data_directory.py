"""The gateway's claim on its data directory (log.dirs): a lock, and who the directory belongs to.

As Kafka's meta.properties, the directory records the cluster id and node id
of the gateway that made it; a gateway of another cluster, or a directory
holding files that are not the gateway's, is refused rather than written
into. The lock keeps a second gateway out while the first runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from gateway.directory_lock import LOCK_FILE, DirectoryInUse, lock_directory
from gateway.settings.properties import read_properties
from gateway.settings.table import BrokerSettings

META = "meta.properties"
CHECKPOINTS_DIRECTORY = "checkpoints"  # the partitions' checkpoints (topics/partition_checkpoints.py)
OURS = (META, LOCK_FILE, CHECKPOINTS_DIRECTORY)  # besides the embedded stores' directories, store-N


class StartupError(Exception):
    """Why the gateway cannot start, and what to do, in one line."""


def claim_data_directory(settings: BrokerSettings) -> int:
    """Lock log.dirs for this gateway (the returned descriptor holds the lock); StartupError if
    it cannot be written, is in use, or belongs to someone else."""
    directory = settings.log_dirs
    if directory.exists() and not directory.is_dir():
        raise StartupError(f"log.dirs {directory} is not a directory: give a directory this user may write")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = lock_directory(directory)
    except DirectoryInUse:
        raise StartupError(f"log.dirs {directory} is in use by another gateway: stop it, or give this one "
                           f"another directory") from None
    except OSError as exc:
        raise StartupError(f"log.dirs {directory} cannot be written ({exc.strerror}): give a directory this "
                           f"user may write") from None
    try:
        _check_owner(directory, settings)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_owner(directory: Path, settings: BrokerSettings) -> None:
    meta = directory / META
    if meta.exists():
        recorded = {key: value for key, value, _ in read_properties(meta.read_text(errors="replace"))}
        if recorded.get("cluster.id") != settings.cluster_id:
            raise StartupError(f"log.dirs {directory} belongs to cluster {recorded.get('cluster.id')!r}, not "
                               f"{settings.cluster_id!r}: give that cluster.id, or another directory")
        return
    strangers = sorted(p.name for p in directory.iterdir() if p.name not in OURS and not _is_store(p))
    if strangers:
        raise StartupError(f"log.dirs {directory} holds files that are not the gateway's "
                           f"({', '.join(strangers[:3])}): give an empty directory or one this gateway made")
    _write_durably(meta, f"version=1\ncluster.id={settings.cluster_id}\nnode.id={settings.node_id}\n")


def _is_store(path: Path) -> bool:
    return path.is_dir() and path.name.startswith("store-") and path.name[6:].isdigit()


def _write_durably(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
