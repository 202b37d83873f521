"""SimHash: one similarity-preserving digest from many equal-length digests (ISO 24138, used by
the Meta-, Audio- and Mixed-Codes and by ISCC-ID v0).

Bit ``i`` of the result is set when at least half of the input digests have bit ``i`` set (ties
set the bit, so a single digest hashes to itself). Bits are numbered MSB-first over the bytes.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from isccd.iscc.exceptions import IsccError

__all__ = ["alg_simhash", "simhash_joined", "simhash_rows"]

#: ``_BIT_TABLE[v, k]`` is bit ``k`` (MSB first) of the byte value ``v``.
_BIT_TABLE: npt.NDArray[np.int64] = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1
).astype(np.int64)

#: Up to this many digests, counting bits with Python ints beats any numpy call (measured with
#: 32-byte digests: 1.2 against 4.9 µs for 2, equal at about 15). Names are a few n-grams.
_BITSLICE_MAX_ROWS = 12

#: Up to this many rows, unpacking to bits is faster than the per-column histograms (measured
#: with 32-byte digests: equal at about 1,000 rows).
_UNPACK_MAX_ROWS = 512


def simhash_rows(rows: npt.NDArray[np.uint8]) -> bytes:
    """SimHash of the rows of a 2-D ``uint8`` array, one digest per row.

    Few rows are unpacked to bits and summed. Many rows are counted from a histogram of the byte
    values in each column instead, which is linear in the input size and allocates nothing per
    row.

    Args:
        rows: shape ``(n, nbytes)`` with ``n >= 1``.

    Returns:
        ``nbytes`` bytes.

    Raises:
        IsccError: ``rows`` holds no digest.
    """
    n, nbytes = rows.shape
    if n == 0:
        raise IsccError("SimHash needs at least one digest")
    if n <= _UNPACK_MAX_ROWS:
        counts = np.unpackbits(rows, axis=1).sum(axis=0, dtype=np.int64)
    else:
        per_byte = np.empty((nbytes, 8), dtype=np.int64)
        for col in range(nbytes):
            per_byte[col] = np.bincount(rows[:, col], minlength=256) @ _BIT_TABLE
        counts = per_byte.ravel()
    # count >= n / 2, in integers.
    return np.packbits(2 * counts >= n).tobytes()


def alg_simhash(hash_digests: Iterable[bytes | bytearray | memoryview]) -> bytes:
    """SimHash of equal-length digests.

    Args:
        hash_digests: one or more byte strings of the same length (``bytes``, ``bytearray`` or
            ``memoryview``).

    Returns:
        A digest as long as each input.

    Raises:
        IsccError: no digests, or digests of different lengths.
        TypeError: ``hash_digests`` is a single ``bytes``/``str`` object, or an item is not
            bytes-like.
    """
    if isinstance(hash_digests, bytes | bytearray | memoryview | str):
        raise TypeError(
            f"alg_simhash takes a sequence of digests, not one {type(hash_digests).__name__}"
        )
    digests = hash_digests if isinstance(hash_digests, list | tuple) else list(hash_digests)
    if not digests:
        raise IsccError("SimHash needs at least one digest")
    joined = b"".join(digests)
    lengths = set(map(len, digests))
    if len(lengths) != 1:
        raise IsccError(f"SimHash digests must have equal lengths, got {sorted(lengths)}")
    nbytes = lengths.pop()
    if len(joined) != nbytes * len(digests):
        # A memoryview of wider items: its len() counts items, not bytes.
        raise IsccError("SimHash digests must be flat byte strings")
    return simhash_joined(joined, len(digests), nbytes)


def simhash_joined(joined: bytes, n: int, nbytes: int) -> bytes:
    """SimHash of ``n >= 1`` digests of ``nbytes`` bytes each, concatenated in ``joined``.

    Unchecked (``len(joined)`` must be ``n * nbytes``): for callers that made the digests
    themselves, which :func:`alg_simhash`'s checks of its input would cost a fifth as much
    again on a short name.
    """
    if n <= 3:
        return _simhash_few(joined, n, nbytes)
    if n <= _BITSLICE_MAX_ROWS:
        return _simhash_bitsliced(joined, n, nbytes)
    return simhash_rows(np.frombuffer(joined, dtype=np.uint8).reshape(n, nbytes))


def _simhash_few(joined: bytes, n: int, nbytes: int) -> bytes:
    """SimHash of one to three digests (a short name's n-grams), without counting: a bit is set
    in one digest, in either of two, or in at least two of three."""
    if n == 1:
        return bytes(joined)
    a = int.from_bytes(joined[:nbytes], "big")
    b = int.from_bytes(joined[nbytes : 2 * nbytes], "big")
    if n == 2:
        return (a | b).to_bytes(nbytes, "big")
    c = int.from_bytes(joined[2 * nbytes :], "big")
    return (a & b | c & (a | b)).to_bytes(nbytes, "big")


def _simhash_bitsliced(joined: bytes, n: int, nbytes: int) -> bytes:
    """SimHash of ``n`` digests of ``nbytes`` bytes each (concatenated in ``joined``), counted
    with Python ints: ``counters[j]`` holds bit ``j`` of every bit position's count."""
    counters: list[int] = []
    for start in range(0, n * nbytes, nbytes):
        carry = int.from_bytes(joined[start : start + nbytes], "big")
        for j, counter in enumerate(counters):  # add the digest to the counts, with carries
            counters[j] = counter ^ carry
            carry &= counter
            if not carry:
                break
        else:
            counters.append(carry)
    # A bit is set where its count reaches half the digests (count >= ceil(n / 2)): compare
    # the sliced counts with that threshold from the most significant bit down.
    threshold = (n + 1) // 2
    above, equal = 0, (1 << (8 * nbytes)) - 1
    for j in range(max(len(counters), threshold.bit_length()) - 1, -1, -1):
        counter = counters[j] if j < len(counters) else 0
        if threshold >> j & 1:
            equal &= counter
        else:
            above |= equal & counter
            equal &= ~counter
    return (above | equal).to_bytes(nbytes, "big")
