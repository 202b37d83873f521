"""Image-Code (ISO 24138 Content-Code, SubType IMAGE): a perceptual hash of a normalized
32x32 grayscale image.

The pixels are transformed with a 2-D DCT (rows, then columns). Each 8x8 block of the upper-left
16x16 coefficients (top-left, top-right, bottom-left, bottom-right, as in iscc-core 1.5.0; 1.4.0
and earlier used overlapping blocks for bits 65-256) gives 64 bits: 1 where a coefficient is
greater than the block's median. Bits 1-64 come from the first block, and so on.

The image must already be normalized (orientation, alpha on white, borders cropped, gray,
resized to 32x32); that is the extractor's job.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import MT, ST_CC, VS, encode_component
from isccd.iscc.dct import dct_rows
from isccd.iscc.exceptions import IsccError

__all__ = ["gen_image_code", "gen_image_code_v0", "soft_hash_image_v0"]

_SIDE = 32

#: (column, row) origins of the 8x8 coefficient blocks, in the order they contribute bits.
_BLOCKS = ((0, 0), (8, 0), (0, 8), (8, 8))

Pixels = Iterable[float] | npt.NDArray[np.number]


def _pixel_matrix(pixels: Pixels) -> npt.NDArray[np.float64]:
    if isinstance(pixels, bytes | bytearray | memoryview):
        pixels = np.frombuffer(pixels, dtype=np.uint8)  # e.g. Pillow's Image.tobytes()
    elif not isinstance(pixels, np.ndarray | list | tuple):
        pixels = list(pixels)
    try:
        values = np.asarray(pixels)
    except ValueError:
        raise IsccError("pixels must be a flat sequence of 1024 numbers (32x32)") from None
    if values.dtype.kind not in "iuf":
        raise TypeError(f"pixels must be ints or floats, got dtype {values.dtype}")
    if values.shape not in ((_SIDE * _SIDE,), (_SIDE, _SIDE)):
        raise IsccError(f"pixels must be 1024 values (32x32), got shape {values.shape}")
    if not (np.all(values >= 0) and np.all(values <= 255)):  # also refuses NaN
        raise IsccError("pixel values must be gray levels from 0 to 255")
    return values.astype(np.float64).reshape(_SIDE, _SIDE)


def soft_hash_image_v0(pixels: Pixels, bits: int = 64) -> bytes:
    """Perceptual hash digest of a normalized image.

    Args:
        pixels: 1024 gray levels (0 to 255, ints or floats), row-major 32x32: a flat sequence
            or iterable, 1024 bytes, or a numpy array of shape (1024,) or (32, 32).
        bits: a multiple of 32 from 32 to 256.

    Returns:
        64 bits per block used (8, 16, 24 or 32 bytes), as the reference returns; the Image-Code
        takes the first ``bits``.

    Raises:
        IsccError: not 1024 pixels, a value outside 0..255 (or NaN), or ``bits`` out of range.
        TypeError: ``bits`` is not an int, or a pixel is not a number.
    """
    bits = require_unit_bits(bits)
    pixel_matrix = _pixel_matrix(pixels)
    # Rows, then columns, as the reference does: every coefficient sees the same float64
    # operations in the same order, so ties with the median fall the same way.
    coefficients = dct_rows(dct_rows(pixel_matrix).T).T
    hash_bits = []
    for x, y in _BLOCKS[: -(-bits // 64)]:
        block = coefficients[y : y + 8, x : x + 8].ravel()
        ordered = np.sort(block)
        # statistics.median of 64 values: the mean of the two middle ones.
        median = (ordered[31] + ordered[32]) / 2
        hash_bits.append(block > median)
    return np.packbits(np.concatenate(hash_bits)).tobytes()


def gen_image_code_v0(pixels: Pixels, bits: int = 64) -> dict[str, str]:
    """Image-Code of a normalized image.

    Args:
        pixels: see :func:`soft_hash_image_v0`.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:EE..."}``.

    Raises:
        IsccError: see :func:`soft_hash_image_v0`.
        TypeError: see :func:`soft_hash_image_v0`.
    """
    bits = require_unit_bits(bits)
    digest = soft_hash_image_v0(pixels, bits)
    code = encode_component(MT.CONTENT, ST_CC.IMAGE, VS.V0, bits, digest)
    return {"iscc": "ISCC:" + code}


def gen_image_code(pixels: Pixels, bits: int = 64) -> dict[str, str]:
    """Image-Code with the latest algorithm (v0); see :func:`gen_image_code_v0`."""
    return gen_image_code_v0(pixels, bits)
