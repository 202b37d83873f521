"""Unsigned LEB128 varints ("uvarint", as in multiformats): 7 bits per byte, least significant
group first, the high bit set on every byte but the last.

ISO 24138 uses them for the uniqueness counter of an ISCC-ID v0. Pure: no I/O.
"""

from __future__ import annotations

from isccd.iscc.exceptions import IsccError

__all__ = ["decode_uvarint", "encode_uvarint"]


def encode_uvarint(n: int) -> bytes:
    """Encode a non-negative integer as a minimal uvarint.

    Raises:
        IsccError: ``n`` is negative.
        TypeError: ``n`` is not an int.
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"uvarint value must be an int, got {type(n).__name__}")
    if n < 0:
        raise IsccError(f"uvarint value must not be negative, got {n}")
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_uvarint(data: bytes) -> tuple[int, int]:
    """Decode the uvarint at the start of ``data``.

    Returns:
        ``(value, number of bytes read)``; bytes after the varint are ignored.

    Raises:
        IsccError: ``data`` is empty or ends inside the varint.
    """
    value = 0
    for i, byte in enumerate(data):
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return value, i + 1
    raise IsccError("truncated uvarint" if data else "no uvarint in empty data")
