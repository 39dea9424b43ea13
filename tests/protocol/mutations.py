"""Random damage to valid encodings, for the fuzzing property tests."""

from hypothesis import strategies as st


def mutated(data: st.DataObject, encoded: bytes, *, keep: int = 0) -> bytearray:
    """`encoded` with one to four bytes set, runs cut or bytes inserted after its first `keep`."""
    damaged = bytearray(encoded)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["set", "cut", "insert"]))
        position = data.draw(st.integers(min(keep, len(damaged)), len(damaged)))
        if action == "set" and position < len(damaged):
            damaged[position] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del damaged[position:position + data.draw(st.integers(1, 8))]
        else:
            damaged[position:position] = data.draw(st.binary(min_size=1, max_size=8))
    return damaged
