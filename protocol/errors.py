"""The exceptions the codecs raise."""


class DecodeError(ValueError):
    """Input bytes that cannot be decoded.

    The only exception any decoder in `protocol` raises on bad input
    (truncated data, bad lengths, unknown API key or version, bad varints,
    CRC mismatch, malformed frames). `offset` is the byte position where
    decoding failed, when known.
    """

    def __init__(self, reason: str, offset: int | None = None):
        self.reason = reason
        self.offset = offset
        where = "" if offset is None else f" at byte {offset}"
        super().__init__(f"{reason}{where}")


class EncodeError(ValueError):
    """A value that the requested format or version cannot carry."""
