"""The group coordinator: classic and KIP-848 consumer groups and their committed offsets."""

from gateway.group.group_coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
