"""CHP, the clustered hashmap protocol: the key-value message and its commands.

Every CHP message except the ICANHAZ? request is a five-frame kvmsg; the
commands (KVSYNC, KTHXBAI, KVPUB, KVSET, HUGZ) differ only in what they put
in those frames.
"""

from protocol.chp.commands import (
    CAS,
    HUGZ,
    ICANHAZ,
    KTHXBAI,
    decode_icanhaz,
    encode_icanhaz,
    expected_sequence,
    hugz,
    is_command_key,
    is_passive_hugz,
    kthxbai,
)
from protocol.chp.kvmsg import KVMsg, decode_kvmsg, encode_kvmsg
from protocol.chp.ttl import TTL, expiry_ms, with_absolute_ttl

__all__ = [
    "CAS",
    "HUGZ",
    "ICANHAZ",
    "KTHXBAI",
    "TTL",
    "KVMsg",
    "decode_icanhaz",
    "decode_kvmsg",
    "encode_icanhaz",
    "encode_kvmsg",
    "expected_sequence",
    "expiry_ms",
    "hugz",
    "is_command_key",
    "is_passive_hugz",
    "kthxbai",
    "with_absolute_ttl",
]
