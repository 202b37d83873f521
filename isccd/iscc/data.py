"""Data-Code (ISO 24138, MainType DATA): a similarity hash of raw bytes.

The bytes are cut into content-defined chunks (average 1 KiB), each chunk is hashed with xxh32,
and the 64-permutation MinHash of those hashes is the 256-bit digest. Similar files share most
chunks and so most minima.

:class:`DataHasherV0` streams: it keeps only the running MinHash vector and the last, possibly
incomplete, chunk (at most 8 KiB), so its memory does not grow with the input. Any split of the
input into pushes gives the same code, because only the last chunk of a buffer can be cut by the
buffer's end; every earlier cut depends only on the bytes before it.

Pure: reads only from the stream it is given.
"""

from __future__ import annotations

import numpy as np

from isccd.iscc._bits import require_unit_bits
from isccd.iscc._stream import BytesLike, Readable, as_uint8, feed
from isccd.iscc.cdc import DATA_AVG_CHUNK_SIZE, alg_cdc_params
from isccd.iscc.codec import encode_component
from isccd.iscc.constants import MT, ST, VS
from isccd.iscc.kernels import SMALL_DATA, kernels_for
from isccd.iscc.minhash import minhash_init

__all__ = [
    "DataHasher",
    "DataHasherV0",
    "gen_data_code",
    "gen_data_code_v0",
    "soft_hash_data_v0",
]

_CDC_PARAMS = alg_cdc_params(DATA_AVG_CHUNK_SIZE)
_MAX_CHUNK = _CDC_PARAMS[1]
_NO_BYTES = np.empty(0, dtype=np.uint8)
#: What is hashed in one call, all at hand (a tuple: ``isinstance`` of a union made on each call
#: costs ten times as much).
_AT_HAND = (bytes, bytearray, memoryview, np.ndarray)


class DataHasherV0:
    """Incremental Data-Code hasher: push bytes in pieces of any size, then ask for the code.

    Unlike the reference, :meth:`digest` and :meth:`code` do not end the hashing: more data may
    be pushed afterwards, and the digest then covers everything pushed so far.
    """

    def __init__(self, data: BytesLike | None = None) -> None:
        """Start hashing, optionally with a first piece of data.

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        self._pushed = 0
        self._minvec = minhash_init()
        self._chunks = 0
        self._tail = _NO_BYTES
        if data is not None:
            self.push(data)

    def push(self, data: BytesLike) -> None:
        """Hash the next piece of the input.

        Args:
            data: Any bytes-like object (it is not kept: the hasher copies what it needs).

        Raises:
            TypeError: If ``data`` is not bytes-like.
        """
        new = as_uint8(data)
        tail = self._tail
        self._pushed += new.size
        scan = kernels_for(self._pushed, SMALL_DATA).data_scan
        start = 0
        if tail.size == 0:
            buf = new
        elif new.size >= _MAX_CHUNK:
            # Finish the chunks that start in the tail on a small joined buffer instead of
            # copying all of ``data``: each of them ends within _MAX_CHUNK bytes of its start,
            # before the end of the joined buffer, so it is cut exactly as in the whole stream.
            head = np.concatenate((tail, new[:_MAX_CHUNK]))
            pos, chunks = scan(head, 0, tail.size, self._minvec, _CDC_PARAMS)
            self._chunks += chunks
            buf, start = new, pos - tail.size
        else:
            buf = np.concatenate((tail, new))
        pos, chunks = scan(buf, start, buf.size, self._minvec, _CDC_PARAMS)
        self._chunks += chunks
        self._tail = buf[pos:].copy()

    def digest(self) -> bytes:
        """The 256-bit Data-Hash of everything pushed so far (the last chunk included)."""
        kernels = kernels_for(self._pushed, SMALL_DATA)
        minvec = self._minvec.copy()
        if self._tail.size or not self._chunks:
            # The last chunk, or for empty input the single empty feature xxh32(b"").
            kernels.hash_fold(self._tail, minvec)
        return kernels.compress(minvec)

    def code(self, bits: int = 64) -> str:
        """The Data-Code unit of everything pushed so far, without the ``ISCC:`` prefix.

        Args:
            bits: Body length, a multiple of 32 from 32 to 256.

        Raises:
            IsccError: If ``bits`` is not a legal length.
            TypeError: If ``bits`` is not an int.
        """
        bits = require_unit_bits(bits)
        return encode_component(MT.DATA, ST.NONE, VS.V0, bits, self.digest())


#: The current Data-Code hasher.
DataHasher = DataHasherV0


def _hash(stream: Readable | BytesLike) -> DataHasherV0:
    hasher = DataHasherV0()
    feed(stream, hasher.push)
    return hasher


def gen_data_code_v0(stream: Readable | BytesLike, bits: int = 64) -> dict[str, str]:
    """Create a Data-Code (algorithm version 0).

    Args:
        stream: A binary stream (read to its end, not closed) or a bytes-like object.
        bits: Body length, a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:G..."}``.

    Raises:
        IsccError: If ``bits`` is not a legal length.
        TypeError: If ``bits`` is not an int, or ``stream`` is neither a binary stream nor
            bytes-like.
    """
    bits = require_unit_bits(bits)
    return {"iscc": "ISCC:" + _hash(stream).code(bits)}


def gen_data_code(stream: Readable | BytesLike, bits: int = 64) -> dict[str, str]:
    """Create a Data-Code with the latest algorithm (:func:`gen_data_code_v0`)."""
    return gen_data_code_v0(stream, bits)


def soft_hash_data_v0(stream: Readable | BytesLike) -> bytes:
    """The 256-bit Data-Hash of a stream or bytes-like object (the Data-Code body).

    Raises:
        TypeError: If ``stream`` is neither a binary stream nor bytes-like.
    """
    if isinstance(stream, _AT_HAND):
        # All at hand: one kernel call instead of a push and a digest (bytes, a small file's
        # content, as they are: always flat and contiguous).
        buf = stream if type(stream) is bytes else as_uint8(stream)
        return kernels_for(len(buf), SMALL_DATA).data_digest(buf, _CDC_PARAMS)
    return _hash(stream).digest()
