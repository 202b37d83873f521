"""The binary layout of an ISCC unit (ISO 24138 clause 5): the varnibble header, the Length field
rules of each MainType, and the canonical string form of a unit.

An ISCC is ``HEADER || BODY``. The header holds four fields (MainType, SubType, Version, Length),
each written as a "varnibble" of 1 to 4 nibbles::

    0xxx                  0 ..    7
    10xx xxxx             8 ..   71
    110x xxxx xxxx       72 ..  583
    1110 xxxx xxxx xxxx 584 .. 4679

and padded with a zero nibble to whole bytes. Codes made with the standard parameters have a
2-byte header. The functions mirror iscc-core 1.5.0 in name, arguments and results, except that
invalid input raises :class:`~isccd.iscc.exceptions.IsccError` instead of producing a code whose
header and body disagree.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from isccd.iscc.constants import (
    ID_BITS,
    LN,
    MT,
    MULTIBASE,
    ST,
    ST_CC,
    ST_ID,
    ST_ID_REALM,
    ST_ISCC,
    UNIT_MAINTYPES,
    UNITS,
    VS,
)
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import (
    decode_base32,
    decode_base32hex,
    encode_base32,
    encode_base32hex,
)

__all__ = [
    "LN",
    "MT",
    "ST",
    "ST_CC",
    "ST_ID",
    "ST_ID_REALM",
    "ST_ISCC",
    "VS",
    "IsccTuple",
    "decode_base32",
    "decode_base32hex",
    "decode_header",
    "decode_length",
    "decode_units",
    "decode_varnibble",
    "encode_base32",
    "encode_base32hex",
    "encode_component",
    "encode_header",
    "encode_length",
    "encode_units",
    "encode_varnibble",
    "iscc_clean",
]

#: ``(maintype, subtype, version, length field, body)`` as read from a header.
IsccTuple = tuple[int, int, int, int, bytes]

#: The largest value a varnibble holds.
VARNIBBLE_MAX = 4679


_MULTIBASE_CHARS = frozenset(m.value for m in MULTIBASE)

#: Unit lengths in bits whose Length field fits the one nibble of a two-byte header.
_UNIT_LENGTHS = frozenset(range(32, 257, 32))


def _require_int(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def encode_varnibble(n: int) -> list[int]:
    """Write ``n`` (0..4679) as a varnibble.

    Returns:
        The nibbles (ints 0..15), most significant first.

    Raises:
        IsccError: ``n`` is out of range.
    """
    n = _require_int("varnibble value", n)
    if 0 <= n < 8:
        return [n]
    if 8 <= n < 72:
        n -= 8
        return [0b1000 | n >> 4, n & 0xF]
    if 72 <= n < 584:
        n -= 72
        return [0b1100 | n >> 8, n >> 4 & 0xF, n & 0xF]
    if 584 <= n <= VARNIBBLE_MAX:
        n -= 584
        return [0b1110, n >> 8, n >> 4 & 0xF, n & 0xF]
    raise IsccError(f"header value {n} is outside 0..{VARNIBBLE_MAX}")


def _nibble(data: bytes, i: int) -> int:
    byte = data[i >> 1]
    return byte & 0xF if i & 1 else byte >> 4


def decode_varnibble(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Read one varnibble from ``data`` starting at nibble ``pos``.

    Returns:
        ``(value, position of the next nibble)``.

    Raises:
        IsccError: the data ends inside the varnibble, or it starts with ``1111``.
    """
    total = len(data) * 2
    if pos >= total:
        raise IsccError("ISCC header is truncated")
    first = _nibble(data, pos)
    if first < 0b1000:
        size, value, offset = 1, first, 0
    elif first < 0b1100:
        size, value, offset = 2, first & 0b11, 8
    elif first < 0b1110:
        size, value, offset = 3, first & 0b1, 72
    elif first == 0b1110:
        size, value, offset = 4, 0, 584
    else:
        raise IsccError("invalid varnibble prefix 1111 in ISCC header")
    if pos + size > total:
        raise IsccError("ISCC header is truncated")
    for i in range(pos + 1, pos + size):
        value = value << 4 | _nibble(data, i)
    return value + offset, pos + size


def encode_header(mtype: int, stype: int, version: int = 0, length: int = 1) -> bytes:
    """Encode the four header fields (each 0..4679) as varnibbles, zero-padded to whole bytes.

    ``length`` is the raw Length field; see :func:`encode_length` for its meaning per MainType.

    Returns:
        2 to 8 bytes.

    Raises:
        IsccError: a field is out of range.
        TypeError: a field is not an int.
    """
    if 0 <= mtype <= 7 and 0 <= stype <= 7 and 0 <= version <= 7 and 0 <= length <= 7:
        # Every code made with standard parameters: one nibble per field, two bytes.
        return bytes((mtype << 4 | stype, version << 4 | length))
    nibbles: list[int] = []
    for n in (mtype, stype, version, length):
        nibbles += encode_varnibble(n)
    if len(nibbles) % 2:
        nibbles.append(0)
    return bytes(nibbles[i] << 4 | nibbles[i + 1] for i in range(0, len(nibbles), 2))


def decode_header(data: bytes) -> IsccTuple:
    """Read the header at the start of ``data``.

    Returns:
        ``(maintype, subtype, version, length field, tail)`` with plain ints; ``tail`` is all the
        bytes after the header (the body, and whatever follows it in a concatenation).

    Raises:
        IsccError: the data is too short for a header, or a field has an invalid prefix.
        TypeError: ``data`` is not bytes-like.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"ISCC bytes expected, got {type(data).__name__}")
    data = bytes(data)
    if len(data) >= 2 and not (data[0] | data[1]) & 0x88:
        # Every code made with standard parameters: four one-nibble fields, two bytes.
        return data[0] >> 4, data[0] & 0xF, data[1] >> 4, data[1] & 0xF, data[2:]
    pos = 0
    fields = []
    for _ in range(4):
        value, pos = decode_varnibble(data, pos)
        fields.append(value)
    if pos & 1 and _nibble(data, pos) == 0:
        pos += 1  # the padding nibble
    if pos & 1:
        # A non-zero nibble where the padding belongs: the reference reads the rest as a bit
        # stream from there, so we do the same (such a header is never canonical).
        nibbles = [_nibble(data, i) for i in range(pos, len(data) * 2)] + [0]
        tail = bytes(nibbles[i] << 4 | nibbles[i + 1] for i in range(0, len(nibbles) - 1, 2))
    else:
        tail = data[pos >> 1 :]
    mt, st, vs, ln = fields
    return mt, st, vs, ln, tail


def _mt_name(value: int) -> str:
    try:
        return MT(value).name
    except ValueError:
        return repr(value)


def encode_units(units: Sequence[MT]) -> int:
    """The Length field of an ISCC-CODE holding the optional ``units`` (in ``UNITS`` order).

    Raises:
        IsccError: not one of the eight combinations of META, SEMANTIC, CONTENT.
    """
    key = tuple(units)
    for index, combination in enumerate(UNITS):
        if key == combination:
            return index
    names = ", ".join(_mt_name(u) for u in key) or "empty"
    raise IsccError(f"invalid ISCC-UNIT combination: {names}")


def decode_units(unit_id: int) -> tuple[MT, ...]:
    """The optional units (sorted by MainType) of an ISCC-CODE with Length field ``unit_id``.

    Raises:
        IsccError: ``unit_id`` is not 0..7.
    """
    unit_id = _require_int("unit_id", unit_id)
    if not 0 <= unit_id < len(UNITS):
        raise IsccError(f"ISCC-CODE unit combination {unit_id} is not in 0..7")
    return tuple(sorted(UNITS[unit_id]))


def encode_length(mtype: int, length: int) -> int:
    """Encode ``length`` as the raw Length field for ``mtype``.

    - META, SEMANTIC, CONTENT, DATA, INSTANCE, FLAKE: ``length`` is the body in bits, a multiple
      of 32 and at least 32; the field is ``bits / 32 - 1``.
    - ISCC: ``length`` is already the unit combination (0..7, see :func:`encode_units`).
    - ID: ``length`` is the body in bits (64..96); the field is the counter size in bytes.

    Raises:
        IsccError: the length is not legal for the MainType, or the MainType is unknown.
    """
    length = _require_int("length", length)
    error = f"invalid length {length} for MainType {mtype}"
    if mtype in UNIT_MAINTYPES:
        if length >= 32 and not length % 32 and length // 32 - 1 <= VARNIBBLE_MAX:
            return length // 32 - 1
    elif mtype == MT.ISCC:
        if 0 <= length <= 7:
            return length
    elif mtype == MT.ID and 64 <= length <= 96:
        return (length - 64) // 8
    raise IsccError(error)


def decode_length(mtype: int, length: int, subtype: int | None = None) -> LN:
    """The body length in bits that the raw Length field ``length`` declares for ``mtype``.

    ``subtype`` matters for ISCC-CODEs only: a WIDE code always has a 256-bit body.

    Raises:
        IsccError: the length is not one of the bit lengths in :class:`LN`, or the MainType is
            unknown.
    """
    length = _require_int("length", length)
    if mtype in UNIT_MAINTYPES:
        bits = (length + 1) * 32
    elif mtype == MT.ISCC:
        bits = 256 if subtype == ST_ISCC.WIDE else len(decode_units(length)) * 64 + 128
    elif mtype == MT.ID:
        bits = length * 8 + 64
    else:
        raise IsccError(f"invalid length {length} for MainType {mtype}")
    try:
        return LN(bits)
    except ValueError:
        raise IsccError(f"invalid length field {length} for MainType {mtype}") from None


def encode_component(mtype: int, stype: int, version: int, bit_length: int, digest: bytes) -> str:
    """Encode one unit as base32 ``header || body`` (without the ``ISCC:`` prefix).

    Args:
        mtype: any MainType but ``MT.ISCC`` (use ``gen_iscc_code_v0`` for ISCC-CODEs).
        stype: the SubType.
        version: the Version.
        bit_length: the body length in bits: a multiple of 32 from 32 to 256 for units and
            Flake-Codes, 64, 72, 80 or 96 for ISCC-IDs.
        digest: at least ``bit_length / 8`` bytes; the rest is ignored.

    Returns:
        The base32 unit, e.g. ``"EAASKDNZNYGUUF5A"``.

    Raises:
        IsccError: an illegal MainType, bit length or field value, or a digest that is too short.
        TypeError: arguments of the wrong type.
    """
    if (
        type(bit_length) is int
        and bit_length in _UNIT_LENGTHS
        and mtype in UNIT_MAINTYPES
        and 0 <= stype <= 7
        and 0 <= version <= 7
        and type(digest) is bytes
        and len(digest) * 8 >= bit_length
    ):
        # What every generator asks for: a two-byte header, nothing to check further.
        header = bytes((mtype << 4 | stype, version << 4 | (bit_length // 32 - 1)))
        return encode_base32(header + digest[: bit_length // 8])
    bit_length = _require_int("bit_length", bit_length)
    if mtype == MT.ISCC:
        raise IsccError(f"{MT.ISCC!r} is not a unit")
    if mtype in UNIT_MAINTYPES:
        if not (32 <= bit_length <= 256 and bit_length % 32 == 0):
            raise IsccError(f"bit length must be a multiple of 32 from 32 to 256, got {bit_length}")
    elif mtype == MT.ID:
        if bit_length not in ID_BITS:
            raise IsccError(f"ISCC-ID bit length must be one of {ID_BITS}, got {bit_length}")
    else:
        raise IsccError(f"illegal MainType {mtype}")
    if not isinstance(digest, bytes | bytearray | memoryview):
        raise TypeError(f"digest must be bytes, got {type(digest).__name__}")
    nbytes = bit_length // 8
    if len(digest) < nbytes:
        raise IsccError(f"digest has {len(digest) * 8} bits, {bit_length} needed")
    header = encode_header(mtype, stype, version, encode_length(mtype, bit_length))
    return encode_base32(header + bytes(digest[:nbytes]))


def iscc_clean(iscc: str) -> str:
    """Strip whitespace, the ``ISCC:`` scheme (any case) and hyphens from an ISCC string.

    Hyphens are kept in a bare string that starts with a multibase character (``f b v z u``),
    as the reference does: base64url uses ``-`` as a digit. Case is never changed.

    Raises:
        IsccError: an empty string, a scheme other than ``iscc``, or more than one ``:``.
        TypeError: ``iscc`` is not a ``str``.
    """
    if not isinstance(iscc, str):
        raise TypeError(f"ISCC must be a str, got {type(iscc).__name__}")
    parts = [part.strip() for part in iscc.strip().split(":")]
    if len(parts) == 1:
        code = parts[0]
        if not code:
            raise IsccError("empty ISCC string")
        return code if code[0] in _MULTIBASE_CHARS else code.replace("-", "")
    if len(parts) == 2:
        scheme, code = parts
        if scheme.lower() != "iscc":
            raise IsccError(f"invalid scheme {scheme!r} (expected 'ISCC:')")
        return code.replace("-", "")
    raise IsccError(f"malformed ISCC string {iscc!r}")
