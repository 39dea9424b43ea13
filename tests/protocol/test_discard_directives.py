"""Discard directives: every directive reads back as written; other bytes are refused cleanly."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.journal.discard_directive import Compaction, Discard, decode_discard, encode_discard

sequences = st.integers(0, 2**63 - 1)
compactions = st.builds(Compaction, sequences, sequences, sequences, st.floats(0, 1))
directives = st.builds(Discard, st.text(max_size=20), st.text(max_size=32), sequences,
                       st.none() | compactions, st.booleans())


@given(directives)
def test_a_directive_reads_back_as_written(directive):
    assert decode_discard(encode_discard(directive)) == directive


@given(directives)
def test_a_directive_that_deletes_nothing_has_the_form_older_stores_read(directive):
    fields = json.loads(encode_discard(directive._replace(deleted=False)))
    assert "deleted" not in fields


@given(st.binary(max_size=200))
def test_any_other_bytes_are_refused_with_value_error(data):
    try:
        decode_discard(data)
    except ValueError:
        pass


@pytest.mark.parametrize("deleted", [1, "true", None])
def test_deleted_is_a_boolean(deleted):
    with pytest.raises(ValueError):
        decode_discard(json.dumps({"subject": "t", "address": "A", "before": 1, "deleted": deleted}).encode())
