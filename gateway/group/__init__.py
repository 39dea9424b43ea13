"""The group coordinator: classic groups and their committed offsets."""

from .coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
