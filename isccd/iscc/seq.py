"""ISCC-SEQ (IEP-0020): units concatenated as raw ``header || body`` bytes, the value of a C2PA
``c2pa.soft-binding`` block for ``io.iscc.v0``.

The reader is strict: canonical headers only, MainTypes META, SEMANTIC, CONTENT, DATA and
INSTANCE only, bodies of 32 to 256 bits present in full, nothing after the last unit. Unknown
SubType and Version values are kept as they are, so decoding and re-encoding is lossless.

Reached only through the public API: neither the daemon nor the commands read or write
ISCC-SEQs (they keep units apart, in the store). The conformance vectors (``encode_seq``,
``decode_seq``; ``isccd selftest`` and ``tests/conformance``) and ``tests/iscc/test_seq.py``
exercise it.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from isccd.iscc.codec import _mt_name, decode_header, encode_header, iscc_clean
from isccd.iscc.constants import SEQ_MAINTYPES
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32, encode_base32

__all__ = ["decode_seq", "encode_seq", "read_unit"]

#: The longest possible header: four 4-nibble varnibbles.
_HEADER_MAX = 8


def read_unit(data: bytes, offset: int = 0) -> int:
    """Check the unit that starts at ``offset`` in an ISCC-SEQ and return where it ends.

    Args:
        data: the ISCC-SEQ bytes (any bytes-like object).
        offset: where the unit starts.

    Returns:
        The offset just after the unit (the start of the next one).

    Raises:
        IsccError: a malformed or non-canonical header, a MainType or Length field an ISCC-SEQ
            does not allow, or a body cut short.
    """
    view = memoryview(data).cast("B")
    window = bytes(view[offset : offset + _HEADER_MAX])
    try:
        mt, st, vs, ln, _ = decode_header(window)
    except IsccError as e:
        raise IsccError(f"malformed ISCC-HEADER at offset {offset}: {e}") from None
    header = encode_header(mt, st, vs, ln)
    if not window.startswith(header):
        raise IsccError(f"non-canonical ISCC-HEADER at offset {offset}")
    if mt not in SEQ_MAINTYPES:
        raise IsccError(
            f"MainType {_mt_name(mt)} is not permitted in an ISCC-SEQ (offset {offset})"
        )
    if ln > 7:
        raise IsccError(f"unsupported Length field {ln} at offset {offset}")
    end = offset + len(header) + 4 * (ln + 1)
    if end > len(view):
        raise IsccError(f"truncated ISCC-UNIT at offset {offset}")
    return end


def encode_seq(units: Iterable[str]) -> bytes:
    """Concatenate unit strings into an ISCC-SEQ, in the given order.

    A ``io.iscc.v0`` soft binding additionally requires Version 0 and 256-bit units; that is
    for the caller to enforce.

    Args:
        units: one or more unit strings of MainType META, SEMANTIC, CONTENT, DATA or INSTANCE,
            32 to 256 bits; the ``ISCC:`` prefix, lower case and hyphens are accepted.

    Returns:
        The ISCC-SEQ bytes.

    Raises:
        IsccError: no units, an empty or malformed unit, an ISCC-CODE, ISCC-ID or Flake-Code, or
            more than one unit in one string.
        TypeError: ``units`` is a single ``str`` or ``bytes``, or holds something other than
            strings.
    """
    if isinstance(units, str | bytes | bytearray | memoryview):
        raise TypeError("units must be a sequence of ISCC-UNIT strings")
    seq = bytearray()
    count = 0
    for unit in units:
        if not isinstance(unit, str):
            raise TypeError(f"ISCC-UNIT must be a str, got {type(unit).__name__}")
        if not unit.strip():
            raise IsccError("ISCC-UNIT must not be empty")
        # Upper-case first: iscc_clean keeps the hyphens of a bare string that starts with a
        # multibase character, and bare lower-case units with SubType >= 8 start with "b" or "f".
        raw = decode_base32(iscc_clean(unit.upper()))
        if read_unit(raw) != len(raw):
            raise IsccError(f"trailing data in ISCC-UNIT {unit!r}")
        seq += raw
        count += 1
    if not count:
        raise IsccError("an ISCC-SEQ needs at least one ISCC-UNIT")
    return bytes(seq)


def decode_seq(data: bytes) -> list[str]:
    """Split an ISCC-SEQ into canonical unit strings, in wire order.

    Returns:
        ``["ISCC:...", ...]``; :func:`encode_seq` of the result reproduces ``data``.

    Raises:
        IsccError: empty or malformed data (see :func:`read_unit`).
        TypeError: ``data`` is not bytes-like.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"ISCC-SEQ must be bytes, got {type(data).__name__}")
    raw = bytes(memoryview(data).cast("B"))
    if not raw:
        raise IsccError("empty ISCC-SEQ")
    units = []
    offset = 0
    while offset < len(raw):
        end = read_unit(raw, offset)
        units.append("ISCC:" + encode_base32(raw[offset:end]))
        offset = end
    return units
