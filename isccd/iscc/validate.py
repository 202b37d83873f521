"""Is a string a strictly well-formed ISCC?

Strictly well-formed means: the canonical form (``ISCC:`` and upper-case base32 without padding
or hyphens), a known type prefix, a legal (MainType, SubType, Version) combination, and a body
exactly as long as the header declares. Beyond the reference, isccd also refuses what no
conformant encoder emits (each refusal is a code the reference would accept but could not
round-trip or would misread):

- base32 text whose unused trailing bits are not zero (two strings for one code);
- units longer than 256 bits, and ISCC-IDs longer than 96 bits or of 88 bits;
- an ISCC-CODE whose SubType contradicts its units (SUM or NONE with a Content unit, a content
  SubType without one, WIDE with optional units).

Pure: no I/O.
"""

from __future__ import annotations

from isccd.iscc.codec import decode_header, decode_length, decode_units
from isccd.iscc.constants import (
    CANONICAL_REGEX,
    ID_BITS,
    MT,
    PREFIXES,
    ST_ISCC,
    SUBTYPE_MAP,
    UNIT_MAINTYPES,
    VS,
)
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32, encode_base32
from isccd.iscc.multiformat import normalize_multiformat

__all__ = ["iscc_validate", "iscc_validate_mf"]


def _check_iscc_code(st: int, ln: int) -> None:
    units = decode_units(ln)
    has_content = MT.SEMANTIC in units or MT.CONTENT in units
    if st == ST_ISCC.WIDE:
        if units:
            raise IsccError("a WIDE ISCC-CODE holds only Data and Instance units")
    elif st == ST_ISCC.SUM:
        if units:
            raise IsccError("a SUM ISCC-CODE holds only Data and Instance units")
    elif st == ST_ISCC.NONE:
        if has_content or not units:
            raise IsccError("an ISCC-CODE of SubType NONE holds Meta, Data and Instance units")
    elif not has_content:
        raise IsccError(f"ISCC-CODE SubType {ST_ISCC(st).name} needs a Semantic or Content unit")


def _check(iscc: str) -> None:
    if not isinstance(iscc, str):
        raise TypeError(f"ISCC must be a str, got {type(iscc).__name__}")
    if not CANONICAL_REGEX.fullmatch(iscc):
        raise IsccError("ISCC string does not match ^ISCC:[A-Z2-7]{10,68}$")
    text = iscc[5:]
    raw = decode_base32(text)
    if encode_base32(raw) != text:
        raise IsccError("non-canonical base32: the unused trailing bits are not zero")
    if text[:2] not in PREFIXES:
        raise IsccError(f"header starts with invalid sequence {text[:2]}")
    mt, st, vs, ln, body = decode_header(raw)
    subtypes = SUBTYPE_MAP.get((MT(mt), VS(vs))) if vs in (0, 1) else None
    if subtypes is None:
        raise IsccError(f"invalid version {vs} for MainType {MT(mt).name}")
    if st not in {member.value for member in subtypes}:
        raise IsccError(f"invalid SubType {st} for {MT(mt).name} {VS(vs).name}")
    nbytes = decode_length(mt, ln, st) // 8
    if len(body) != nbytes:
        raise IsccError(f"header expects {nbytes} but got {len(body)} bytes")
    bits = nbytes * 8
    if mt in UNIT_MAINTYPES and bits > 256:
        raise IsccError(f"{MT(mt).name} units have at most 256 bits, this one has {bits}")
    if mt == MT.ID and bits not in ID_BITS:
        raise IsccError(f"ISCC-ID bodies have {ID_BITS} bits, this one has {bits}")
    if mt == MT.ISCC:
        _check_iscc_code(st, ln)


def iscc_validate(iscc: str, strict: bool = True) -> bool:
    """Check that ``iscc`` is a strictly well-formed ISCC in canonical form.

    Args:
        iscc: the string to check, e.g. ``"ISCC:EAASKDNZNYGUUF5A"``.
        strict: raise on failure instead of returning ``False``.

    Returns:
        ``True`` if valid; ``False`` if not and ``strict`` is false. Unlike the reference,
        non-strict mode never raises for a ``str``.

    Raises:
        IsccError: not valid, in strict mode; the message says why.
        TypeError: ``iscc`` is not a ``str``.
    """
    try:
        _check(iscc)
    except IsccError:
        if strict:
            raise
        return False
    return True


def iscc_validate_mf(iscc: str, strict: bool = True) -> bool:
    """Like :func:`iscc_validate`, but also accept the multiformat forms (``f b v z u``) and a
    missing ``ISCC:`` prefix.

    Raises:
        IsccError: not valid, in strict mode.
        TypeError: ``iscc`` is not a ``str``.
    """
    try:
        _check("ISCC:" + normalize_multiformat(iscc))
    except IsccError:
        if strict:
            raise
        return False
    return True
