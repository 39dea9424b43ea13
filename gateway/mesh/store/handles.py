"""Bounded caches: open file descriptors, and loaded segment indexes."""

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable

from gateway.mesh.store.storage_failure import naming


class LruCache:
    """Keeps at most `capacity` items; the least recently used one is evicted."""

    def __init__(self, capacity: int, on_evict: Callable[[Hashable, object], None]):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._on_evict = on_evict
        self._items: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key):
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._on_evict(*self._items.popitem(last=False))

    def pop(self, key):
        return self._items.pop(key, None)

    def clear(self) -> None:
        while self._items:
            self._on_evict(*self._items.popitem(last=False))


class FileHandles:
    """Read-write descriptors by path, at most `capacity` open at once.

    Closing a descriptor with unsynced writes is safe: fsync through a later
    descriptor of the same file flushes them.
    """

    def __init__(self, capacity: int):
        self._cache = LruCache(capacity, lambda _path, fd: os.close(fd))

    def __len__(self) -> int:
        return len(self._cache)

    def fd(self, path: str) -> int:
        fd = self._cache.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._cache.put(path, fd)
        return fd

    def close(self, path: str) -> None:
        fd = self._cache.pop(path)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        self._cache.clear()


class Files:
    """What segments share: descriptors, loaded sealed-segment indexes,
    directories whose new or removed entries still need an fsync, and how much
    space an active segment reserves ahead of its writes at most (0: none)."""

    def __init__(self, max_open_files: int, max_loaded_indexes: int, reserve_max_bytes: int = 0):
        self.handles = FileHandles(max_open_files)
        self.reserve_max_bytes = reserve_max_bytes
        self.loaded_indexes = LruCache(max_loaded_indexes, lambda segment, _: segment.drop_index())
        self.dirty_directories: set[str] = set()

    def fd(self, path: str) -> int:
        return self.handles.fd(path)

    def fdatasync(self, path: str) -> None:
        """Through the descriptor kept open for its writes (fsync acts on the file): no open
        and close of its own, for the caller's thread only (another may evict it meanwhile)."""
        with naming(path):
            os.fdatasync(self.fd(path))


def fsync_directory(path: str) -> None:
    """Make new and removed entries of a directory durable."""
    _sync_path(path, os.O_DIRECTORY, os.fsync)


def fdatasync_file(path: str) -> None:
    """Through a descriptor of its own: fsync acts on the file, not the descriptor."""
    _sync_path(path, 0, os.fdatasync)


def _sync_path(path: str, flags: int, sync: Callable[[int], None]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | flags)
    try:
        with naming(path):
            sync(fd)
    finally:
        os.close(fd)
