"""Fixtures of the store log tests."""

import os

import pytest

from gateway.mesh.store.store_log import StoreLog


@pytest.fixture
def store(tmp_path):
    with StoreLog(tmp_path / "data", segment_bytes=4096) as opened:
        yield opened


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch):
    """fsync is slow on shared disks and no in-process test can observe it; the
    SIGKILL test runs the real calls in its subprocess."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    monkeypatch.setattr(os, "fdatasync", lambda fd: None)
