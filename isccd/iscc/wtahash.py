"""Winner-takes-all hash of the Video-Code (ISO 24138): one bit per fixed pair of positions in
the 380-element sum of MPEG-7 frame signatures.

Bit ``k`` (MSB first) is 1 when ``vec[p1] > vec[p0]`` for the ``k``-th pair ``(p0, p1)`` of
:data:`~isccd.iscc._tables.WTA_VIDEO_ID_PERMUTATIONS`; a tie gives 0.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from isccd.iscc._tables import WTA_VIDEO_ID_PERMUTATIONS
from isccd.iscc.exceptions import IsccError

__all__ = ["WTA_VECTOR_LENGTH", "alg_wtahash"]

#: Length of an MPEG-7 frame signature, and of the vector the hash reads.
WTA_VECTOR_LENGTH = 380

_PAIRS = np.array(WTA_VIDEO_ID_PERMUTATIONS, dtype=np.intp)
_FIRST = _PAIRS[:, 0]
_SECOND = _PAIRS[:, 1]


def alg_wtahash(vec: Sequence[float] | npt.NDArray[np.number], bits: int) -> bytes:
    """WTA-hash of a 380-element vector.

    Args:
        vec: 380 real numbers (the column sums of the frame signatures).
        bits: hash length, a multiple of 8 from 8 to 256.

    Returns:
        ``bits / 8`` bytes.

    Raises:
        IsccError: ``vec`` is not 380 long, or ``bits`` is out of range.
        TypeError: ``bits`` is not an int, or ``vec`` holds something other than real numbers.
    """
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise TypeError(f"bits must be an int, got {type(bits).__name__}")
    if not (8 <= bits <= len(_PAIRS) and bits % 8 == 0):
        raise IsccError(f"WTA-hash bits must be a multiple of 8 from 8 to 256, got {bits}")
    values = np.asarray(vec)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"alg_wtahash takes real numbers, got dtype {values.dtype}")
    if values.shape != (WTA_VECTOR_LENGTH,):
        raise IsccError(
            f"alg_wtahash takes a flat vector of {WTA_VECTOR_LENGTH} values, got shape "
            f"{values.shape}"
        )
    return np.packbits(values[_SECOND[:bits]] > values[_FIRST[:bits]]).tobytes()
