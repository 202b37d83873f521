"""Content-defined chunking (ISO 24138, iscc-core 1.5.0 ``cdc.py``): the plain-Python reference.

The Data-Code cuts its input into chunks whose boundaries depend only on the content (a
FastCDC-style "gear" rolling hash with a stricter mask before the centre size and a looser one
after it), so an insertion near the start of a file moves only nearby boundaries.

This module is the readable statement of the algorithm and the oracle the compiled chunker of
:mod:`isccd.iscc._jit` is tested against; it is also what the pure-Python fallback runs when
numba is unavailable. It is deliberately simple and slow (a few MB/s).

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from isccd.iscc._tables import CDC_GEAR
from isccd.iscc.exceptions import IsccError

__all__ = [
    "DATA_AVG_CHUNK_SIZE",
    "CdcParams",
    "alg_cdc_chunks",
    "alg_cdc_offset",
    "alg_cdc_params",
]

#: Average chunk size of the Data-Code in bytes. Conformance critical.
DATA_AVG_CHUNK_SIZE = 1024


#: Chunker parameters ``(min_size, max_size, center_size, mask_s, mask_l)``.
CdcParams = tuple[int, int, int, int, int]


def alg_cdc_params(avg_size: int) -> CdcParams:
    """Derive the chunker parameters from the average chunk size.

    Args:
        avg_size: Target average chunk size in bytes, at least 2 (1024 for the Data-Code).

    Returns:
        ``(min_size, max_size, center_size, mask_s, mask_l)``: ``avg/4``, ``avg*8``,
        ``avg - (min + ceil(min/2))`` and the masks of ``round(log2(avg)) +/- 1`` bits.

    Raises:
        IsccError: If ``avg_size`` is below 2.
        TypeError: If ``avg_size`` is not an int.
    """
    if not isinstance(avg_size, int) or isinstance(avg_size, bool):
        raise TypeError(f"avg_size must be an int, not {type(avg_size).__name__}")
    if avg_size < 2:
        raise IsccError(f"avg_size must be at least 2, got {avg_size}")
    min_size = avg_size // 4
    offset = min_size + -(-min_size // 2)
    bits = round(math.log2(avg_size))
    return (min_size, avg_size * 8, avg_size - offset, 2 ** (bits + 1) - 1, 2 ** (bits - 1) - 1)


def alg_cdc_offset(  # noqa: PLR0917 - the reference's positional signature
    buffer: bytes | bytearray | memoryview, mi: int, ma: int, cs: int, mask_s: int, mask_l: int
) -> int:
    """Find the length of the chunk that starts at the beginning of ``buffer``.

    The gear hash restarts at every chunk, and the first ``mi`` bytes are never hashed. Before
    ``cs`` a cut needs ``mask_s`` bits clear, after it ``mask_l`` bits; ``ma`` caps the chunk.

    Args:
        buffer: The remaining data (the chunk starts at index 0).
        mi: Minimum chunk size.
        ma: Maximum chunk size.
        cs: Centre size, where the mask switches from ``mask_s`` to ``mask_l``.
        mask_s: Mask used before ``cs``.
        mask_l: Mask used from ``cs`` on.

    Returns:
        The cut point: ``i + 1`` at the first content-defined boundary, otherwise
        ``min(ma, len(buffer))``.
    """
    pattern = 0
    size = len(buffer)
    i = min(mi, size)
    barrier = min(cs, size)
    while i < barrier:
        pattern = (pattern >> 1) + CDC_GEAR[buffer[i]]
        if not pattern & mask_s:
            return i + 1
        i += 1
    barrier = min(ma, size)
    while i < barrier:
        pattern = (pattern >> 1) + CDC_GEAR[buffer[i]]
        if not pattern & mask_l:
            return i + 1
        i += 1
    return i


def alg_cdc_chunks(
    data: bytes | bytearray | memoryview,
    utf32: bool,
    avg_chunk_size: int = DATA_AVG_CHUNK_SIZE,
) -> Iterator[bytes]:
    """Yield the content-defined chunks of ``data``.

    Args:
        data: The data to chunk.
        utf32: Round every cut down to a multiple of 4 bytes (for UTF-32 encoded text).
        avg_chunk_size: Target average chunk size in bytes (at least 2).

    Returns:
        An iterator of chunks that concatenate to ``data``; empty ``data`` yields one ``b""``.

    Raises:
        IsccError: If ``avg_chunk_size`` is below 2.
        TypeError: If ``data`` is not bytes-like.
    """
    params = alg_cdc_params(avg_chunk_size)
    view = memoryview(data).cast("B")
    return _chunks(view, utf32, params)


def _chunks(view: memoryview, utf32: bool, params: CdcParams) -> Iterator[bytes]:
    if not view:
        yield b""
        return
    pos = 0
    while pos < len(view):
        cut = alg_cdc_offset(view[pos:], *params)
        if utf32:
            # A cut below 4 would round to 0 and never advance (the reference loops forever
            # there): take one whole code unit instead.
            cut = cut - cut % 4 or min(4, len(view) - pos)
        yield bytes(view[pos : pos + cut])
        pos += cut
