"""Leader-epoch histories of a partition: (epoch, first sequence) pairs, ascending.

A store keeps one for each fenced partition (store/fences.py), a leader
announces its own, and the two meet where Kafka's follower truncation asks
the leader where an epoch ends: the first sequence whose epochs differ.
"""

from __future__ import annotations

from collections.abc import Sequence

NO_EPOCH = -1  # not known: the record predates the partition's first fence

Epochs = Sequence[Sequence[int]]


def epoch_at(epochs: Epochs, sequence: int) -> int:
    """The leader epoch of the record at `sequence` (NO_EPOCH: not known)."""
    found = NO_EPOCH
    for epoch, first in epochs:
        if first > sequence:
            break
        found = epoch
    return found


def first_divergence(ours: Epochs, theirs: Epochs, last: int) -> int | None:
    """The first sequence up to `last` where both histories know the epoch and differ, else None.
    Both are constant between their entries, so their entries are the only places to look."""
    for sequence in sorted({0, *(first for _, first in ours), *(first for _, first in theirs)}):
        if sequence > last:
            return None
        mine, other = epoch_at(ours, sequence), epoch_at(theirs, sequence)
        if NO_EPOCH not in (mine, other) and mine != other:
            return sequence
    return None
