"""The records of the gateway's journals: JSON entries on Dafka partitions, in generations.

Each record's content is one entry, a JSON object with a "type". Generation
0 of a journal is its original partition; a later generation g is a
partition of its own whose records are a header {"type": "generation",
"generation": g}, the owner's whole state as ordinary entries, a complete
marker {"type": "snapshot_complete"}, then the entries written since. Every
generation's partition address is derived from the cluster id, the
journal's kind and the generation number, so any gateway of the cluster
finds them among a subject's heads.
"""

from __future__ import annotations

import json
import uuid

COMPLETE = {"type": "snapshot_complete"}
# A compaction takes the number after the newest generation the stores report,
# so numbers are consecutive; the search tolerates a few missing (held only by
# stores that are down) and stops after more misses in a row.
MAX_GENERATION_GAP = 16


def generation_uuid(cluster_id: str, kind: str, generation: int) -> str:
    """A generation's partition address; generation 0 keeps the journal's original one."""
    name = f"dafka-gateway:{cluster_id}:{kind}" + (f":{generation}" if generation else "")
    return uuid.uuid5(uuid.NAMESPACE_URL, name).hex.upper()


def existing_generations(cluster_id: str, kind: str, heads: dict[str, int]) -> dict[int, str]:
    """{generation: address} of the journal's generations among a subject's heads.

    The subject is shared by every cluster on the mesh, so addresses are
    computed and looked up rather than every unknown partition read.
    """
    found, generation, misses = {}, 0, 0
    while misses <= MAX_GENERATION_GAP:
        address = generation_uuid(cluster_id, kind, generation)
        if address in heads:
            found[generation], misses = address, 0
        else:
            misses += 1
        generation += 1
    return found


def header(generation: int) -> dict:
    return {"type": "generation", "generation": generation}


def replayable(generation: int, contents: list[bytes]) -> tuple[list[dict], list[bytes]] | None:
    """A generation's entries to replay (its state) and the contents written since
    its snapshot; None if its snapshot never completed."""
    entries = [json.loads(content) for content in contents]
    if generation == 0:
        return entries, contents
    if not entries or entries[0] != header(generation) or COMPLETE not in entries:
        return None
    end = entries.index(COMPLETE)
    return entries[1:end] + entries[end + 1:], contents[end + 1:]


def encoded(entry: dict) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode()
