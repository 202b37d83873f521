"""Split an ISCC string into its units: an ISCC-CODE into the units it was built from, a
concatenation of units (the base32 form of an ISCC-SEQ) into each unit.

Pure: no I/O.
"""

from __future__ import annotations

from isccd.iscc.codec import decode_header, decode_length, decode_units, encode_component
from isccd.iscc.constants import MT, ST, ST_ISCC
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32
from isccd.iscc.multiformat import normalize_multiformat

__all__ = ["iscc_decompose"]


def iscc_decompose(iscc_code: str) -> list[str]:
    """The units of an ISCC-CODE, or of concatenated units, as base32 strings without ``ISCC:``.

    An ISCC-CODE expands to 64-bit units: Meta (SubType NONE), Semantic and Content (the
    ISCC-CODE's SubType), Data and Instance, in MainType order; a WIDE ISCC-CODE to a 128-bit
    Data and a 128-bit Instance unit. An ISCC-CODE ends the input.

    Concatenated unit strings (with or without hyphens) only decode as such when every unit is
    64 bits, since only then does each unit fill whole base32 characters.

    Args:
        iscc_code: canonical, URI (``iscc:...``), multiformat or bare base32 form.

    Raises:
        IsccError: malformed text or header, a unit whose body is cut short, or bytes after an
            ISCC-CODE.
        TypeError: ``iscc_code`` is not a ``str``.
    """
    raw = decode_base32(normalize_multiformat(iscc_code))
    if not raw:
        raise IsccError("empty ISCC")
    units: list[str] = []
    while raw:
        mt, st, vs, ln, tail = decode_header(raw)
        nbytes = decode_length(mt, ln, st) // 8
        if len(tail) < nbytes:
            raise IsccError(
                f"truncated ISCC: the header declares {nbytes} body bytes, {len(tail)} follow"
            )
        if mt != MT.ISCC:
            units.append(encode_component(mt, st, vs, nbytes * 8, tail[:nbytes]))
            raw = tail[nbytes:]
            continue
        if len(tail) > nbytes:
            raise IsccError(f"{len(tail) - nbytes} bytes after the ISCC-CODE")
        if st == ST_ISCC.WIDE:
            units.append(encode_component(MT.DATA, ST.NONE, vs, 128, tail[:16]))
            units.append(encode_component(MT.INSTANCE, ST.NONE, vs, 128, tail[16:32]))
            break
        for idx, mtype in enumerate(decode_units(ln)):
            stype = ST.NONE if mtype == MT.META else st
            units.append(encode_component(mtype, stype, vs, 64, tail[idx * 8 : idx * 8 + 8]))
        units.append(encode_component(MT.DATA, ST.NONE, vs, 64, tail[-16:-8]))
        units.append(encode_component(MT.INSTANCE, ST.NONE, vs, 64, tail[-8:]))
        break
    return units
