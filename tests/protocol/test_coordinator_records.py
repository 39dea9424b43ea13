"""The internal topics' records: Kafka's partition of an id, and values as Kafka's layouts read them."""

from hypothesis import given
from hypothesis import strategies as st

from protocol.kafka.coordinator_records import (
    GroupMetadataValue,
    OffsetCommitValue,
    coordinator_partition,
    encoded,
)
from tests.gateway.test_internal_topics import Reader, decoded_offsets_record, kafka_partition

names = st.text(max_size=30)


@given(key=names, partitions=st.integers(1, 100))
def test_the_partition_is_javas_string_hash_made_positive(key, partitions):
    assert coordinator_partition(key, partitions) == kafka_partition(key, partitions)


def test_known_java_hashes():
    assert coordinator_partition("", 50) == 0
    assert coordinator_partition("a", 50) == 97 % 50
    assert coordinator_partition("polygenelubricants", 50) == 0  # hashCode is -2^31: Utils.abs makes it 0
    assert coordinator_partition("my-group", 50) == 1906497762 % 50  # hashCode is -1906497762


@given(offset=st.integers(0, 2**63 - 1), epoch=st.integers(-1, 2**31 - 1), metadata=names,
       commit_ms=st.integers(0, 2**50))
def test_an_offset_commit_value_reads_with_kafkas_layout(offset, epoch, metadata, commit_ms):
    value = encoded(3, OffsetCommitValue(offset=offset, leader_epoch=epoch, metadata=metadata,
                                         commit_timestamp=commit_ms))
    reader = Reader(value)
    assert (reader.take("h"), reader.take("q"), reader.take("i"), reader.string(), reader.take("q")) == (
        3, offset, epoch, metadata, commit_ms)
    assert reader.pos == len(value)


@given(members=st.lists(st.tuples(names, st.none() | names, st.binary(max_size=20)), max_size=4),
       leader=st.none() | names)
def test_a_group_metadata_value_reads_with_kafkas_layout(members, leader):
    Member = GroupMetadataValue.Members
    value = encoded(3, GroupMetadataValue(
        protocol_type="consumer", generation=7, protocol="range", leader=leader, current_state_timestamp=5,
        members=[Member(member_id=m, group_instance_id=i, client_id="c", client_host="/h", rebalance_timeout=1,
                        session_timeout=2, subscription=s, assignment=b"") for m, i, s in members]))
    key = b"\x00\x02\x00\x01g"
    assert decoded_offsets_record(key, value) == ("group", "g", ("consumer", 7, "range", leader,
                                                                  [m for m, _, _ in members]))
