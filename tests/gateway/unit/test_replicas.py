"""Replica lists of a cluster's partitions: preferred leaders spread, the next leader chosen
among live replicas, a gateway that joins for the first time made preferred for its share."""

from collections import Counter

from gateway.cluster.replicas import adopted, successor


def test_new_partitions_start_with_the_gateway_leading_fewest_and_list_every_live_one():
    load = Counter({1: 2, 2: 1, 3: 1})
    assert successor(None, {1, 2, 3}, load) == (2, [2, 3, 1])


def test_a_leaderless_partition_goes_to_the_live_replica_leading_fewest_the_earlier_on_a_tie():
    value = {"leader": 3, "epoch": 4, "replicas": [3, 1, 2]}
    assert successor(value, {1, 2}, Counter({1: 1, 2: 1})) == (1, [3, 1, 2])
    assert successor(value, {1, 2}, Counter({1: 2, 2: 1})) == (2, [3, 1, 2])


def test_a_leader_outside_the_list_joins_it():
    assert successor({"leader": 3, "epoch": 0, "replicas": [3]}, {1, 2}, Counter()) == (1, [3, 1])
    assert successor({"leader": 3, "epoch": 0}, {2}, Counter()) == (2, [3, 2])  # a key from before replicas


def test_a_new_gateway_is_first_in_its_share_taken_from_those_first_in_most():
    lists = {("t", n): [1 + n % 2, 2 - n % 2] for n in range(6)}  # 1 and 2 first in three each
    after = adopted(lists, 3)
    assert Counter(replicas[0] for replicas in after.values()) == Counter({1: 2, 2: 2, 3: 2})
    assert all(sorted(replicas) == [1, 2, 3] for replicas in after.values())
    assert all(replicas[1:] == lists[p] for p, replicas in after.items() if replicas[0] == 3)
