"""Audio-Code (ISO 24138 Content-Code, SubType AUDIO): a similarity hash of a Chromaprint
fingerprint.

The fingerprint is a vector of signed 32-bit ints (``fpcalc -raw -json -signed``). Each value is
one 4-byte big-endian two's-complement digest. The digest of the code is eight 32-bit SimHashes::

    [all values] [quarter 1..4, original order] [third 1..3, values sorted ascending]

Quarters and thirds are consecutive buckets whose sizes differ by at most one, the larger ones
first (``more_itertools.divide``); an empty bucket gives four zero bytes.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import MT, ST_CC, VS, encode_component
from isccd.iscc.exceptions import IsccError
from isccd.iscc.simhash import simhash_rows

__all__ = ["gen_audio_code", "gen_audio_code_v0", "soft_hash_audio_v0"]

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_EMPTY_DIGEST = bytes(32)
_EMPTY_PART = bytes(4)

Chromaprint = Iterable[int] | npt.NDArray[np.integer]


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _fingerprint(cv: Chromaprint) -> npt.NDArray[np.int64]:
    if isinstance(cv, str | bytes | bytearray | memoryview):
        raise TypeError(f"cv must be a sequence of ints, got {type(cv).__name__}")
    items = cv if isinstance(cv, np.ndarray | list | tuple) else list(cv)
    if len(items) == 0:
        return np.empty(0, dtype=np.int64)
    try:
        values = np.asarray(items)
    except ValueError:
        raise TypeError("cv must be a flat sequence of ints") from None
    if values.dtype.kind not in "iu" or values.ndim != 1:
        # Ints beyond 64 bits make numpy fall back to float or object arrays.
        if values.ndim == 1 and all(map(_is_int, items)):
            raise IsccError("cv values must be signed 32-bit ints")
        raise TypeError(f"cv must be a flat sequence of ints, got dtype {values.dtype}")
    if values.min() < _INT32_MIN or values.max() > _INT32_MAX:
        raise IsccError("cv values must be signed 32-bit ints")
    return values.astype(np.int64)


def _as_digests(values: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """One row of 4 bytes (big-endian two's complement) per value."""
    return values.astype(">i4").view(np.uint8).reshape(-1, 4)


def _bucket_hashes(digests: npt.NDArray[np.uint8], buckets: int) -> list[bytes]:
    quotient, remainder = divmod(len(digests), buckets)
    parts = []
    stop = 0
    for i in range(buckets):
        start = stop
        stop += quotient + (1 if i < remainder else 0)
        parts.append(simhash_rows(digests[start:stop]) if stop > start else _EMPTY_PART)
    return parts


def soft_hash_audio_v0(cv: Chromaprint, bits: int = 64) -> bytes:
    """Similarity hash digest of a Chromaprint fingerprint.

    Args:
        cv: the fingerprint, signed 32-bit ints (any iterable, or an integer numpy array); may
            be empty. An iterator is read once, into a list.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``bits / 8`` bytes, except 32 bytes for ``bits == 32`` or an empty ``cv`` (all zero), as
        the reference returns; the Audio-Code takes the first ``bits``.

    Raises:
        IsccError: a value outside the int32 range, or ``bits`` out of range.
        TypeError: ``bits`` is not an int, or ``cv`` is not a flat sequence of ints.
    """
    bits = require_unit_bits(bits)
    values = _fingerprint(cv)
    if len(values) == 0:
        return _EMPTY_DIGEST
    # The reference stops as soon as it has `bits`; at 32 bits it never matches and runs on.
    parts_needed = 8 if bits == 32 else bits // 32
    digests = _as_digests(values)
    parts = [simhash_rows(digests), *_bucket_hashes(digests, 4)]
    if parts_needed > len(parts):
        parts += _bucket_hashes(_as_digests(np.sort(values)), 3)
    return b"".join(parts[:parts_needed])


def gen_audio_code_v0(cv: Chromaprint, bits: int = 64) -> dict[str, str]:
    """Audio-Code of a Chromaprint fingerprint.

    Args:
        cv: see :func:`soft_hash_audio_v0`.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:EI..."}``.

    Raises:
        IsccError: see :func:`soft_hash_audio_v0`.
        TypeError: see :func:`soft_hash_audio_v0`.
    """
    bits = require_unit_bits(bits)
    digest = soft_hash_audio_v0(cv, bits)
    code = encode_component(MT.CONTENT, ST_CC.AUDIO, VS.V0, bits, digest)
    return {"iscc": "ISCC:" + code}


def gen_audio_code(cv: Chromaprint, bits: int = 64) -> dict[str, str]:
    """Audio-Code with the latest algorithm (v0); see :func:`gen_audio_code_v0`."""
    return gen_audio_code_v0(cv, bits)
