"""Binary Star, the passive's pending list and the active's outbox, without sockets."""

import pytest

from gateway.chp.binary_star import BinaryStar
from gateway.chp.hashmap import Hashmap
from gateway.chp.outbox import Outbox
from gateway.chp.pending import Pending
from gateway.settings.kinds import NotAllowed
from gateway.settings.table import ChpSettings
from protocol.chp import KVMsg
from protocol.chp.peer import State

A, B = bytes(16), bytes(range(16))


def test_pair_starting_together_makes_the_primary_active():
    primary, backup = BinaryStar(True, 2, now=0), BinaryStar(False, 2, now=0)
    primary.on_peer(backup.state, now=0.5)
    backup.on_peer(primary.state, now=0.6)
    assert (primary.state, backup.state) == (State.ACTIVE, State.PASSIVE)


def test_passive_takes_over_only_when_the_peer_is_silent_and_a_client_asks():
    passive = BinaryStar(False, 2, now=0)
    passive.on_peer(State.ACTIVE, now=1)
    assert not passive.on_client_request(now=2.9)
    assert passive.state is State.PASSIVE
    assert passive.on_client_request(now=3)
    assert passive.state is State.ACTIVE


def test_silent_peer_alone_does_not_make_a_passive_active():
    passive = BinaryStar(True, 2, now=0)
    passive.on_peer(State.ACTIVE, now=1)
    assert not passive.peer_alive(now=100)
    assert passive.state is State.PASSIVE


def test_fresh_primary_waits_a_peer_timeout_before_serving_alone():
    primary = BinaryStar(True, 2, now=10)
    assert not primary.on_client_request(now=11)
    assert primary.on_client_request(now=12)


def test_backup_never_serves_before_it_heard_an_active_peer():
    backup = BinaryStar(False, 2, now=0)
    assert not backup.on_client_request(now=100)


@pytest.mark.parametrize("restarting", [State.PRIMARY, State.BACKUP])
def test_passive_becomes_active_when_its_peer_restarts(restarting):
    passive = BinaryStar(restarting is State.BACKUP, 2, now=0)
    passive.on_peer(State.ACTIVE, now=0)
    passive.on_peer(restarting, now=1)
    assert passive.state is State.ACTIVE


def test_restarted_primary_follows_the_active_backup():
    primary = BinaryStar(True, 2, now=0)
    primary.on_peer(State.ACTIVE, now=0.1)
    assert primary.state is State.PASSIVE


def test_both_active_at_the_same_term_the_backup_yields():
    primary, backup = BinaryStar(True, 2, now=0), BinaryStar(False, 2, now=0)
    assert primary.on_client_request(now=2) and backup.on_client_request(now=2) is False
    backup.on_peer(State.ACTIVE, now=3, term=0)
    assert backup.on_client_request(now=6)
    assert primary.term == backup.term == 1
    primary.on_peer(State.ACTIVE, now=7, term=1)
    backup.on_peer(State.ACTIVE, now=7, term=1)
    assert (primary.state, backup.state) == (State.ACTIVE, State.PASSIVE)


def test_after_a_pause_or_split_the_server_that_took_over_last_stays_active():
    primary, backup = BinaryStar(True, 2, now=0), BinaryStar(False, 2, now=0)
    primary.on_peer(State.BACKUP, now=0, term=backup.term)
    backup.on_peer(State.ACTIVE, now=0, term=primary.term)
    assert (primary.term, backup.term) == (1, 1)
    assert backup.on_client_request(now=5)  # the primary was paused, or cut off
    assert backup.term == 2
    primary.on_peer(State.ACTIVE, now=9, term=backup.term)
    backup.on_peer(State.ACTIVE, now=9, term=1)
    assert (primary.state, backup.state) == (State.PASSIVE, State.ACTIVE)
    assert primary.term == 2


def test_outbox_publishes_only_what_the_passive_acknowledged():
    outbox = Outbox()
    outbox.add(KVMsg("a", sequence=1, body=b"x"))
    outbox.follow()
    outbox.add(KVMsg("b", sequence=2, body=b"x"))
    assert outbox.releasable() == []
    outbox.acknowledge(0)
    assert outbox.releasable() == []
    outbox.acknowledge(1)
    assert [m.sequence for m in outbox.releasable()] == [1]
    outbox.alone()
    assert [m.sequence for m in outbox.releasable()] == [2]
    assert outbox.published == 2


def test_pending_update_cancelled_by_the_active_copy_in_either_order():
    pending = Pending(timeout=2)
    pending.from_client(KVMsg("a", body=b"1", uuid=A), now=0)
    pending.from_active(A, now=0.1)
    pending.from_active(B, now=0.2)
    pending.from_client(KVMsg("b", body=b"2", uuid=B), now=0.3)
    kept = KVMsg("c", body=b"3", uuid=bytes([7] * 16))
    pending.from_client(kept, now=0.4)
    assert pending.take() == [kept]


def test_pending_drops_what_a_live_active_did_not_replicate_within_the_timeout():
    pending = Pending(timeout=2)
    refused, recent = KVMsg("a", body=b"1", uuid=A), KVMsg("b", body=b"2", uuid=B)
    pending.from_client(refused, now=0)
    pending.from_client(recent, now=1.5)
    pending.peer_heard(now=3)
    assert pending.take() == [recent]


def test_compare_and_set_applies_only_at_the_expected_sequence():
    hashmap = Hashmap()
    created = hashmap.accept(KVMsg("k", body=b"a", properties={"cas": "0"}), now_ms=0)
    assert created.sequence == 1 and created.properties == {}
    assert hashmap.accept(KVMsg("k", body=b"b", properties={"cas": "0"}), now_ms=0) is None
    hashmap.accept(KVMsg("other", body=b"x"), now_ms=0)
    assert hashmap.accept(KVMsg("k", body=b"c", properties={"cas": "2"}), now_ms=0) is None
    assert hashmap.accept(KVMsg("k", body=b"d", properties={"cas": "1"}), now_ms=0).sequence == 3
    assert (hashmap.entries["k"].body, hashmap.key_sequence("k"), hashmap.key_sequence("none")) == (b"d", 3, 0)


def test_a_paired_role_needs_the_peer_host():
    with pytest.raises(NotAllowed, match="chp.peer.host"):
        ChpSettings(chp_role="backup")
    assert ChpSettings(chp_role="backup", chp_peer_host="10.0.0.1").chp_peer_port == 5566
