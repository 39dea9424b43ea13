"""A partition's replicas in a cluster of gateways, in Kafka's terms.

Every gateway can lead every partition, since the stores hold it; a partition's
replicas are the gateways it may be led by, in order of preference, its first
the preferred leader. A new partition gets every gateway that may lead then,
starting with the one leading fewest (so preferred leaders spread as Kafka's
round-robin assignment spreads them); a leader chosen outside the list (none of
it live) joins it at the end, so the leader is always a replica; a reassignment
replaces the list. A gateway that joins for the first time (in no list) joins
every list, first in its share of them, taken from the gateways first in most
(`adopted`): the rebalance then moves those partitions to it, as Kafka's does
after a reassignment. Kafka's internal topics are partitions like the others.
"""

from __future__ import annotations

from collections import Counter


def replicas_of(value: dict) -> list[int]:
    """The replicas a partition key holds (keys written before replicas existed name the leader alone)."""
    return list(value.get("replicas") or [value["leader"]])


def assignment(leader: int, epoch: int, replicas: list[int]) -> dict:
    return {"leader": leader, "epoch": epoch, "replicas": replicas}


def least_loaded(nodes, load: Counter, order=sorted) -> int:
    """The node leading fewest partitions; ties go to the first in `order`."""
    ranked = order(nodes)
    return min(ranked, key=lambda node: (load[node], ranked.index(node)))


def successor(value: dict | None, live: set[int], load: Counter) -> tuple[int, list[int]]:
    """The next leader of a partition without a live leader, and its replicas: a new partition's
    preferred leader, else the live replica leading fewest (the earlier in the list on a tie)."""
    if value is None:
        first, ordered = least_loaded(live, load), sorted(live)
        at = ordered.index(first)
        return first, ordered[at:] + ordered[:at]
    replicas = replicas_of(value)
    eligible = [node for node in replicas if node in live]
    if eligible:
        return least_loaded(eligible, load, order=list), replicas
    node = least_loaded(live, load)
    return node, replicas + [node]


def adopted(replica_lists: dict, node: int) -> dict:
    """The replica lists (by partition) once `node`, in none of them, is in all: first in its share
    of them (as many as each gateway would be first in, the gateways first in most giving theirs up),
    last in the others."""
    firsts = Counter(replicas[0] for replicas in replica_lists.values())
    share = len(replica_lists) // (len(firsts) + 1)
    lists = {}
    for partition, replicas in sorted(replica_lists.items()):
        giver = replicas[0]
        if share and firsts[giver] == max(firsts.values()):
            firsts[giver] -= 1
            share -= 1
            lists[partition] = [node, *replicas]
        else:
            lists[partition] = [*replicas, node]
    return lists
