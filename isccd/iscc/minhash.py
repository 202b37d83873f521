"""MinHash (ISO 24138, iscc-core 1.5.0 ``minhash.py``): 64 permutations, bit-plane compression.

For each of 64 permutations ``(a, b)`` the MinHash keeps the least
``(((a * f + b) mod 2**64) mod (2**61 - 1)) & 0xFFFFFFFF`` over the features ``f``. The 256-bit
digest of the Data-Code and Text-Code keeps the four least significant bits of each minimum,
written as bit-planes: bit 0 of all 64 values, then bit 1, and so on, so a 64-bit digest is a
prefix of the 256-bit one.

Features are folded into a running minimum vector (:func:`minhash_fold`), so a caller hashing
a stream never holds more than one block of features. The vector starts at
:data:`MINHASH_EMPTY`, which no hash value reaches.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from isccd.iscc._tables import MAXH, MAXI64, MPA, MPB, MPRIME
from isccd.iscc.exceptions import IsccError

__all__ = [
    "MINHASH_EMPTY",
    "alg_minhash",
    "alg_minhash_64",
    "alg_minhash_256",
    "alg_minhash_compress",
    "minhash_fold",
    "minhash_init",
]

#: The starting value of every slot of a minimum vector (above every 32-bit hash value).
MINHASH_EMPTY = MAXI64

_MPA = np.array(MPA, dtype=np.uint64)[:, None]
_MPB = np.array(MPB, dtype=np.uint64)[:, None]
_MPRIME = np.uint64(MPRIME)
_MAXH = np.uint64(MAXH)
_U61 = np.uint64(61)
_U1 = np.uint64(1)
#: The shift of each bit-plane, as a column to broadcast against a row of minima.
_PLANES = np.arange(64, dtype=np.uint64)[:, None]

#: What :func:`minhash_init` copies (copying is faster than filling, and it is done per file).
_EMPTY_VECTOR = np.full(64, MINHASH_EMPTY, dtype=np.uint64)
_EMPTY_VECTOR.flags.writeable = False

#: Features folded per numpy step: bounds the temporaries to 64 x 4096 x 8 bytes = 2 MiB.
_BLOCK = 4096


def minhash_init() -> npt.NDArray[np.uint64]:
    """A fresh minimum vector: 64 slots at :data:`MINHASH_EMPTY`."""
    return _EMPTY_VECTOR.copy()


def _as_uint64(features: Iterable[int] | npt.NDArray[np.integer]) -> npt.NDArray[np.uint64]:
    if isinstance(features, np.ndarray):
        if not np.issubdtype(features.dtype, np.integer):
            raise TypeError(f"features must be integers, not {features.dtype}")
        if np.issubdtype(features.dtype, np.signedinteger) and features.size and features.min() < 0:
            raise IsccError("features must be unsigned 64-bit integers, got a negative one")
        return features.astype(np.uint64, copy=False).ravel()
    values = list(features)
    if not all(isinstance(f, int | np.integer) and not isinstance(f, bool) for f in values):
        raise TypeError("features must be integers")
    try:
        return np.array(values, dtype=np.uint64)
    except OverflowError:
        raise IsccError("features must be unsigned 64-bit integers (0 <= f < 2**64)") from None


def minhash_fold(
    minvec: npt.NDArray[np.uint64], features: Iterable[int] | npt.NDArray[np.integer]
) -> None:
    """Lower ``minvec`` in place to include the hashes of ``features``.

    Args:
        minvec: A vector from :func:`minhash_init` (64 ``uint64``), updated in place.
        features: Unsigned 64-bit integer features (normally 32-bit xxh32 values).

    Raises:
        IsccError: If a feature is negative or not below 2**64.
        TypeError: If a feature is not an integer.
    """
    values = _as_uint64(features)
    for start in range(0, values.size, _BLOCK):
        # uint64 array arithmetic wraps modulo 2**64, which the specification requires.
        v = _MPA * values[None, start : start + _BLOCK] + _MPB
        # x mod (2**61 - 1) for x < 2**64: fold the top 3 bits onto the low 61, subtract once.
        v = (v & _MPRIME) + (v >> _U61)
        v -= _MPRIME * (v >= _MPRIME)
        v &= _MAXH
        np.minimum(minvec, v.min(axis=1), out=minvec)


def alg_minhash(features: Iterable[int] | npt.NDArray[np.integer]) -> list[int]:
    """The 64 minimum hash values of ``features``.

    Args:
        features: At least one unsigned 64-bit integer feature.

    Returns:
        64 ints below 2**32.

    Raises:
        IsccError: If there is no feature (the reference raises ``ValueError`` too), or a
            feature is negative or not below 2**64.
        TypeError: If a feature is not an integer.
    """
    values = _as_uint64(features)
    if values.size == 0:
        raise IsccError("MinHash needs at least one feature")
    minvec = minhash_init()
    minhash_fold(minvec, values)
    return [int(v) for v in minvec]


def alg_minhash_64(features: Iterable[int] | npt.NDArray[np.integer]) -> bytes:
    """64-bit MinHash digest: the least significant bit of each of the 64 minima.

    Raises:
        IsccError: If there is no feature or one is out of the unsigned 64-bit range.
        TypeError: If a feature is not an integer.
    """
    return alg_minhash_compress(alg_minhash(features), 1)


def alg_minhash_256(features: Iterable[int] | npt.NDArray[np.integer]) -> bytes:
    """256-bit MinHash digest: the four least significant bit-planes of the 64 minima.

    Raises:
        IsccError: If there is no feature or one is out of the unsigned 64-bit range.
        TypeError: If a feature is not an integer.
    """
    return alg_minhash_compress(alg_minhash(features), 4)


def alg_minhash_compress(mhash: Sequence[int] | npt.NDArray[np.integer], lsb: int = 4) -> bytes:
    """Concatenate the ``lsb`` least significant bit-planes of ``mhash`` into bytes.

    Bit-plane 0 (bit 0 of every value, in order) comes first, then plane 1, and so on. The bit
    string is read as one big-endian number, so when its length is not a multiple of 8 the
    first byte is padded with leading zeros (as in the reference).

    Args:
        mhash: Non-negative integers (a MinHash vector).
        lsb: Number of bit-planes to keep, 1 to 64.

    Returns:
        ``ceil(len(mhash) * lsb / 8)`` bytes.

    Raises:
        IsccError: If ``mhash`` is empty or ``lsb`` is out of range.
    """
    if not 1 <= lsb <= 64:
        raise IsccError(f"lsb must be 1 to 64, got {lsb}")
    values = np.asarray(mhash, dtype=np.uint64)
    if values.size == 0:
        raise IsccError("cannot compress an empty MinHash")
    bits = ((values >> _PLANES[:lsb]) & _U1).astype(np.uint8)  # one row per bit-plane
    pad = -bits.size % 8
    if pad:
        return np.packbits(np.concatenate((np.zeros(pad, dtype=np.uint8), bits.ravel()))).tobytes()
    return np.packbits(bits).tobytes()
