"""The discrete cosine transform of the Image-Code (ISO 24138): an unnormalized DCT-II computed
with Byeong Gi Lee's recursive factorization, as published by nayuki.io and used by iscc-core.

``X[k] = sum(x[n] * cos(pi / N * (n + 1/2) * k))``, without scaling, in float64.

The Image-Code compares DCT coefficients with their median, so a coefficient that differs from
the reference's in the last bit can flip a code bit. Other DCTs (FFT based, scipy) agree only up
to scale and rounding; this module performs the reference's floating-point operations in the
reference's order. :func:`dct_rows` applies the recursion to many rows at once with numpy, which
keeps the operation sequence of every element and is therefore bit-identical too.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from isccd.iscc.exceptions import IsccError

__all__ = ["alg_dct", "dct_rows"]

Float64Array = npt.NDArray[np.float64]


@functools.cache
def _divisors(n: int) -> Float64Array:
    """``cos((i + 0.5) * pi / n) * 2.0`` for ``i < n / 2``.

    Computed with :func:`math.cos` (correctly rounded in practice, like the reference), not
    ``np.cos``, whose vectorized kernels may differ in the last bit.
    """
    divisors = np.array([math.cos((i + 0.5) * math.pi / n) * 2.0 for i in range(n // 2)])
    divisors.flags.writeable = False
    return divisors


def _check_length(n: int) -> None:
    if n < 1 or n & (n - 1):
        raise IsccError(f"DCT length must be a power of two, got {n}")


def _dct(rows: Float64Array) -> Float64Array:
    n = rows.shape[1]
    if n == 1:
        return rows
    half = n // 2
    front = rows[:, :half]
    back = rows[:, : half - 1 : -1]  # rows[:, n - 1 - i] for i < half
    alpha = _dct(front + back)
    beta = _dct((front - back) / _divisors(n))
    out = np.empty_like(rows)
    out[:, 0::2] = alpha
    out[:, 1:-1:2] = beta[:, :-1] + beta[:, 1:]
    out[:, -1] = beta[:, -1]
    return out


def dct_rows(rows: Float64Array) -> Float64Array:
    """DCT-II of every row of a 2-D float64 array (rows are independent).

    Args:
        rows: shape ``(m, n)``; ``n`` a power of two.

    Returns:
        A new array of the same shape.

    Raises:
        IsccError: the row length is not a power of two, or ``rows`` is not 2-D.
        TypeError: ``rows`` is not a float64 array.
    """
    if not isinstance(rows, np.ndarray) or rows.dtype != np.float64:
        raise TypeError("dct_rows takes a float64 numpy array")
    if rows.ndim != 2:
        raise IsccError(f"dct_rows takes a 2-D array, got {rows.ndim} dimensions")
    _check_length(rows.shape[1])
    return _dct(rows)


def alg_dct(v: Sequence[float]) -> list[float]:
    """Unnormalized DCT-II of ``v``, bit-identical to ``iscc_core.dct.alg_dct``.

    Args:
        v: real numbers (ints are converted to float64 first, which is exact up to 2**53).
            The length must be a power of two (1 included).

    Returns:
        The coefficients, as many as there are inputs.

    Raises:
        IsccError: the length is not a power of two.
        TypeError: ``v`` holds something other than real numbers.
    """
    values = np.asarray(v)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"alg_dct takes a sequence of real numbers, got dtype {values.dtype}")
    if values.ndim != 1:
        raise IsccError(f"alg_dct takes a flat sequence, got shape {values.shape}")
    _check_length(values.shape[0])
    result: list[float] = _dct(values.astype(np.float64).reshape(1, -1))[0].tolist()
    return result
