"""Instance-Code (ISO 24138, MainType INSTANCE): a BLAKE3 checksum of the exact bytes.

The body is a prefix of the 256-bit BLAKE3 hash; the full hash is reported as the ``datahash``
multihash (``1e20`` + hex). :class:`InstanceHasherV0` streams in constant memory.

BLAKE3 runs single-threaded here (the reference lets it use all cores): isccd hashes one file per
worker process, and the digest does not depend on threading.

Pure: reads only from the stream it is given.
"""

from __future__ import annotations

from typing import TypedDict

from blake3 import blake3

from isccd.iscc._bits import require_unit_bits
from isccd.iscc._stream import BytesLike, Readable, as_uint8, feed
from isccd.iscc.codec import encode_component
from isccd.iscc.constants import MT, ST, VS

__all__ = [
    "InstanceCode",
    "InstanceHasher",
    "InstanceHasherV0",
    "gen_instance_code",
    "gen_instance_code_v0",
    "hash_instance_v0",
]

#: Multihash prefix of a 256-bit BLAKE3 digest (code 0x1e, length 0x20).
MULTIHASH_BLAKE3 = b"\x1e\x20"


class InstanceCode(TypedDict):
    """The result of :func:`gen_instance_code_v0`."""

    iscc: str
    datahash: str
    filesize: int


class InstanceHasherV0:
    """Incremental Instance-Code hasher: BLAKE3 and a byte count."""

    def __init__(self, data: BytesLike | None = None) -> None:
        """Start hashing, optionally with a first piece of data.

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        self._hasher = blake3()
        #: Number of bytes pushed so far.
        self.filesize = 0
        if data is not None:
            self.push(data)

    def push(self, data: BytesLike) -> None:
        """Hash the next piece of the input.

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        view = as_uint8(data)
        self._hasher.update(view.data)
        self.filesize += view.size

    def digest(self) -> bytes:
        """The 256-bit BLAKE3 digest of everything pushed so far."""
        return self._hasher.digest()

    def multihash(self) -> str:
        """The BLAKE3 digest as a hex multihash, ``"1e20" + hex``."""
        return (MULTIHASH_BLAKE3 + self.digest()).hex()

    def code(self, bits: int = 64) -> str:
        """The Instance-Code unit, without the ``ISCC:`` prefix.

        Args:
            bits: Body length, a multiple of 32 from 32 to 256.

        Raises:
            IsccError: If ``bits`` is not a legal length.
            TypeError: If ``bits`` is not an int.
        """
        bits = require_unit_bits(bits)
        return encode_component(MT.INSTANCE, ST.NONE, VS.V0, bits, self.digest())


#: The current Instance-Code hasher.
InstanceHasher = InstanceHasherV0


def _hash(stream: Readable | BytesLike) -> InstanceHasherV0:
    hasher = InstanceHasherV0()
    feed(stream, hasher.push)
    return hasher


def gen_instance_code_v0(stream: Readable | BytesLike, bits: int = 64) -> InstanceCode:
    """Create an Instance-Code (algorithm version 0).

    Args:
        stream: A binary stream (read to its end, not closed) or a bytes-like object.
        bits: Body length, a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:I...", "datahash": "1e20...", "filesize": n}``; ``datahash`` is the
        full 256-bit hash whatever ``bits`` is.

    Raises:
        IsccError: If ``bits`` is not a legal length.
        TypeError: If ``bits`` is not an int, or ``stream`` is neither a binary stream nor
            bytes-like.
    """
    bits = require_unit_bits(bits)
    hasher = _hash(stream)
    return {
        "iscc": "ISCC:" + hasher.code(bits),
        "datahash": hasher.multihash(),
        "filesize": hasher.filesize,
    }


def gen_instance_code(stream: Readable | BytesLike, bits: int = 64) -> InstanceCode:
    """Create an Instance-Code with the latest algorithm (:func:`gen_instance_code_v0`)."""
    return gen_instance_code_v0(stream, bits)


def hash_instance_v0(stream: Readable | BytesLike) -> bytes:
    """The 256-bit BLAKE3 digest of a stream or bytes-like object (the Instance-Code body).

    Raises:
        TypeError: If ``stream`` is neither a binary stream nor bytes-like.
    """
    if type(stream) is bytes:
        return blake3(stream).digest()  # all at hand: no view of it, no byte count
    return _hash(stream).digest()
