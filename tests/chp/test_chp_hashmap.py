"""The server's hashmap: sequencing, ttl expiry and subtrees, without sockets."""

from hypothesis import given
from hypothesis import strategies as st

from gateway.chp.hashmap import Hashmap
from protocol.chp import KVMsg

KEYS = st.text(alphabet="ab/", max_size=4)


def test_accept_sequences_and_stores_updates():
    hashmap = Hashmap()
    first = hashmap.accept(KVMsg(key="/a/1", body=b"x"), now_ms=0)
    second = hashmap.accept(KVMsg(key="/b/1", body=b"y"), now_ms=0)
    assert (first.sequence, second.sequence) == (1, 2)
    assert [msg.key for msg in hashmap.subtree("/a/")] == ["/a/1"]
    deletion = hashmap.accept(KVMsg(key="/a/1"), now_ms=0)
    assert deletion.sequence == 3 and list(hashmap.subtree("/a/")) == []


def test_expired_keys_are_deleted_as_new_sequenced_updates():
    hashmap = Hashmap()
    hashmap.accept(KVMsg(key="lease", body=b"x", properties={"ttl": "2"}), now_ms=1000)
    hashmap.accept(KVMsg(key="keep", body=b"y"), now_ms=1000)
    assert hashmap.expire(now_ms=2999) == []
    [deletion] = hashmap.expire(now_ms=3000)
    assert (deletion.key, deletion.sequence, deletion.is_delete) == ("lease", 3, True)
    assert list(hashmap.entries) == ["keep"]


def test_replicated_absolute_expiry_is_kept_as_is():
    # A message already carrying an absolute expiry (KVPUB, KVSYNC) is stored
    # unchanged, so a replica expires it at the same instant as the origin.
    replica = Hashmap()
    replica.store(KVMsg(key="lease", sequence=9, body=b"x", properties={"ttl": "5000"}))
    assert replica.expire(now_ms=4999) == []
    assert [msg.key for msg in replica.expire(now_ms=5000)] == ["lease"]


@given(st.lists(st.tuples(KEYS, st.booleans())), KEYS)
def test_a_subtree_is_every_key_under_its_prefix_however_they_came_and_went(updates, prefix):
    hashmap = Hashmap()
    for sequence, (key, deleted) in enumerate(updates, 1):
        hashmap.store(KVMsg(key=key, sequence=sequence, body=b"" if deleted else b"v"))
    assert [msg.key for msg in hashmap.subtree(prefix)] == sorted(k for k in hashmap.entries if k.startswith(prefix))
