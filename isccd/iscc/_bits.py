"""The bit-length check shared by the unit generators.

The reference encodes any ``bits`` it is given and so can emit a code whose header and body
disagree; the generators of isccd refuse such lengths up front instead.

Pure: no I/O.
"""

from __future__ import annotations

import operator

from isccd.iscc.exceptions import IsccError

__all__ = ["MAX_UNIT_BITS", "MIN_UNIT_BITS", "require_unit_bits"]

MIN_UNIT_BITS = 32
MAX_UNIT_BITS = 256


def require_unit_bits(bits: object) -> int:
    """Return ``bits`` as an int if it is a legal unit body length.

    Args:
        bits: a multiple of 32 from 32 to 256 (any integer type but ``bool``).

    Returns:
        ``bits`` as a plain ``int``.

    Raises:
        IsccError: ``bits`` is out of range or not a multiple of 32.
        TypeError: ``bits`` is not an integer.
    """
    if isinstance(bits, bool):
        raise TypeError("bits must be an int, got bool")
    try:
        value = operator.index(bits)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"bits must be an int, got {type(bits).__name__}") from None
    if not (MIN_UNIT_BITS <= value <= MAX_UNIT_BITS and value % 32 == 0):
        raise IsccError(f"bits must be a multiple of 32 from 32 to 256, got {value}")
    return value
