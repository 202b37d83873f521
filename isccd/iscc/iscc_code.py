"""ISCC-CODE (ISO 24138 MainType ISCC): several units under one common header.

A Data-Code and an Instance-Code are always present; a Meta-, a Semantic- and a Content-Code are
optional. The units are put in MainType order whatever order they are given in, and each
contributes the first 64 bits of its body. The header's SubType is the SubType of the Semantic-
and Content-Codes (which must agree), SUM for Data + Instance alone, NONE for Meta + Data +
Instance. Its Length field says which optional units are present.

A WIDE ISCC-CODE holds 128-bit Data and Instance bodies and nothing else. As in the reference,
``wide=True`` only takes effect for exactly a Data- and an Instance-Code of at least 128 bits
each; otherwise the result is an ordinary ISCC-CODE.

Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from isccd.iscc.codec import (
    MT,
    ST_ISCC,
    VS,
    decode_base32,
    decode_header,
    decode_length,
    encode_base32,
    encode_header,
    encode_units,
    iscc_clean,
)
from isccd.iscc.constants import SUBTYPE_MAP
from isccd.iscc.exceptions import IsccError

__all__ = [
    "compose_iscc_code",
    "compose_plan",
    "compose_planned",
    "gen_iscc_code",
    "gen_iscc_code_v0",
]

#: The MainTypes an ISCC-CODE is made of.
_UNIT_TYPES = frozenset((MT.META, MT.SEMANTIC, MT.CONTENT, MT.DATA, MT.INSTANCE))

#: Each MainType by its number, and the constants compose_iscc_code compares with.
_MAIN_TYPES = {int(mt): mt for mt in MT}
_DATA_INSTANCE = (MT.DATA, MT.INSTANCE)
_CONTENT_TYPES = (MT.SEMANTIC, MT.CONTENT)
#: Body bits each unit contributes: normal and WIDE.
_UNIT_BITS = 64
_WIDE_BITS = 128


def _decode_unit(code: str) -> tuple[int, int, bytes]:
    """``(maintype, subtype, body)`` of one unit, checked."""
    raw = decode_base32(iscc_clean(code))
    mtype, stype, version, length, body = decode_header(raw)
    if mtype not in _UNIT_TYPES:
        raise IsccError(f"{code!r} is not an ISCC-UNIT (MainType {mtype}) for an ISCC-CODE")
    try:
        SUBTYPE_MAP[MT(mtype), VS(version)](stype)
    except (KeyError, ValueError):
        raise IsccError(f"{code!r} has an invalid SubType {stype} or Version {version}") from None
    unit_bits = decode_length(mtype, length)
    if len(body) * 8 != unit_bits:
        raise IsccError(
            f"{code!r} is malformed: its header declares {unit_bits} bits, its body has "
            f"{len(body) * 8}"
        )
    if unit_bits < _UNIT_BITS:
        raise IsccError(f"cannot build an ISCC-CODE from units shorter than 64 bits: {code!r}")
    return mtype, stype, body


def gen_iscc_code_v0(codes: Sequence[str], wide: bool = False) -> dict[str, str]:
    """Combine ISCC-UNITs into an ISCC-CODE.

    Args:
        codes: two to five units as strings (``ISCC:`` prefix, hyphens and lower case allowed), in
            any order: a Data- and an Instance-Code, and optionally one Meta-, one Semantic- and
            one Content-Code; each at least 64 bits.
        wide: build a WIDE ISCC-CODE (128-bit Data and Instance bodies) when ``codes`` is exactly
            a Data- and an Instance-Code of at least 128 bits each; ignored otherwise.

    Returns:
        ``{"iscc": "ISCC:K..."}``.

    Raises:
        IsccError: fewer than two codes; a code that does not decode, is not a Meta-, Semantic-,
            Content-, Data- or Instance-Code, is shorter than 64 bits or whose body does not
            match its header; no Data- or no Instance-Code; a MainType given twice; Semantic-
            and Content-Codes of different SubTypes.
        TypeError: ``codes`` is a single string, a code is not a string, or ``wide`` is not a
            bool.
    """
    if isinstance(codes, str):
        raise TypeError("codes must be a sequence of ISCC strings, not one str")
    if not isinstance(wide, bool):
        raise TypeError(f"wide must be a bool, got {type(wide).__name__}")
    codes = list(codes)
    if len(codes) < 2:
        raise IsccError("an ISCC-CODE needs at least two ISCC-UNITs (Data and Instance)")
    return {"iscc": compose_iscc_code([_decode_unit(code) for code in codes], wide=wide)}


def compose_iscc_code(decoded: Sequence[tuple[int, int, bytes]], wide: bool = False) -> str:
    """Combine decoded ISCC-UNITs into an ISCC-CODE, as :func:`gen_iscc_code_v0` combines their
    codes; for units at hand as ``(maintype, subtype, body)``, not to decode them again.

    Args:
        decoded: Two to five units, each at least 64 bits, in any order.
        wide: As for :func:`gen_iscc_code_v0`.

    Returns:
        The ISCC-CODE (``ISCC:K...``).

    Raises:
        IsccError: As :func:`gen_iscc_code_v0` for the combination of the units, or a body
            shorter than 64 bits.
    """
    order, header, nbytes = compose_plan(
        tuple([(mt, st, len(body)) for mt, st, body in decoded]), bool(wide)
    )
    return compose_planned(header, [decoded[i][2] for i in order], nbytes)


def compose_planned(header: bytes, bodies: Sequence[bytes], nbytes: int) -> str:
    """The ISCC-CODE of units' ``bodies`` in the order, with the header and the bytes of each
    that :func:`compose_plan` gave for them."""
    return "ISCC:" + encode_base32(header + b"".join([body[:nbytes] for body in bodies]))


@functools.lru_cache(maxsize=256)
def compose_plan(
    units: tuple[tuple[int, int, int], ...], wide: bool
) -> tuple[tuple[int, ...], bytes, int]:
    """How :func:`compose_iscc_code` combines units of these ``(maintype, subtype, body
    bytes)``: the order it takes them in (MainType order; stable), the header, and the body
    bytes each contributes (see :func:`compose_planned`).

    A few combinations serve every file: each is checked once (an invalid one raises every
    time, as exceptions are not cached).

    Raises:
        IsccError: As :func:`compose_iscc_code`.
    """
    if len(units) < 2:
        raise IsccError("an ISCC-CODE needs at least two ISCC-UNITs (Data and Instance)")
    for _, _, size in units:
        if size * 8 < _UNIT_BITS:
            raise IsccError("cannot build an ISCC-CODE from units shorter than 64 bits")
    order = tuple(sorted(range(len(units)), key=lambda i: units[i][0]))
    wide = wide and all(units[i][2] * 8 >= _WIDE_BITS for i in order)
    header, nbytes = _layout(tuple([(units[i][0], units[i][1]) for i in order]), wide)
    return order, header, nbytes


@functools.lru_cache(maxsize=64)
def _layout(types: tuple[tuple[int, int], ...], wide: bool) -> tuple[bytes, int]:
    """The header of an ISCC-CODE of units of ``types`` (``(maintype, subtype)`` in MainType
    order) and the body bytes each contributes; ``wide`` when WIDE was asked for and every body
    is long enough for it.

    A few combinations serve every file: each is checked and encoded once (an invalid one
    raises every time, as exceptions are not cached).

    Raises:
        IsccError: As :func:`compose_iscc_code` for the combination of the units.
    """
    # A dict spares the enum's call per unit; MT() names an unknown MainType as before.
    main_types = tuple([_MAIN_TYPES[mt] if mt in _MAIN_TYPES else MT(mt) for mt, _ in types])
    if len(set(main_types)) != len(main_types):
        names = ", ".join(mt.name for mt in main_types)
        raise IsccError(f"an ISCC-CODE takes each MainType once, got {names}")
    if main_types[-2:] != _DATA_INSTANCE:
        raise IsccError("an ISCC-CODE needs a Data-Code and an Instance-Code")
    is_wide = wide and main_types == _DATA_INSTANCE
    if is_wide:
        subtype = int(ST_ISCC.WIDE)
    else:
        content_subtypes = {st for mt, st in types if mt in _CONTENT_TYPES}
        if len(content_subtypes) > 1:
            raise IsccError("the Semantic-Code and the Content-Code must have the same SubType")
        if content_subtypes:
            subtype = content_subtypes.pop()
        else:
            subtype = ST_ISCC.SUM if len(types) == 2 else ST_ISCC.NONE
    nbytes = (_WIDE_BITS if is_wide else _UNIT_BITS) // 8
    return encode_header(MT.ISCC, subtype, VS.V0, encode_units(main_types[:-2])), nbytes


def gen_iscc_code(codes: Sequence[str]) -> dict[str, str]:
    """ISCC-CODE with the latest algorithm (v0, never WIDE); see :func:`gen_iscc_code_v0`."""
    return gen_iscc_code_v0(codes)
