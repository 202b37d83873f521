"""The canonical form of an ISCC (``ISCC:`` and upper-case base32), and decoding any accepted
form to its header fields and body.

Pure: no I/O.
"""

from __future__ import annotations

from isccd.iscc.codec import IsccTuple, decode_header
from isccd.iscc.constants import MT, PREFIXES, ST_ISCC
from isccd.iscc.decompose import iscc_decompose
from isccd.iscc.exceptions import IsccError
from isccd.iscc.iscc_code import gen_iscc_code_v0
from isccd.iscc.multibase import decode_base32
from isccd.iscc.multiformat import normalize_multiformat

__all__ = ["iscc_decode", "iscc_normalize"]


def iscc_normalize(iscc_code: str) -> str:
    """The canonical form of an ISCC given in any accepted form.

    A single unit comes back as itself. Two or more units (an ISCC-CODE, or concatenated
    units such as ``GAAW2PRCRS5LNVZV-IAAUVACQKXE3V44W``) are recombined into an ISCC-CODE, each
    unit truncated to 64 bits (128 for a WIDE ISCC-CODE).

    Args:
        iscc_code: canonical, URI (``iscc:...``), multiformat, or bare base32 (any case,
            hyphens allowed).

    Returns:
        ``"ISCC:"`` and upper-case base32.

    Raises:
        IsccError: an unknown type prefix, a malformed code, or units that do not combine into
            an ISCC-CODE.
        TypeError: ``iscc_code`` is not a ``str``.
    """
    code = normalize_multiformat(iscc_code)
    prefix = code.upper()[:2]
    if prefix not in PREFIXES:
        raise IsccError(f"ISCC starts with invalid prefix {prefix!r}")
    mt, st, _, _, _ = decode_header(decode_base32(code))
    units = iscc_decompose(code)
    if len(units) == 1:
        return "ISCC:" + units[0]
    is_wide = mt == MT.ISCC and st == ST_ISCC.WIDE
    iscc: str = gen_iscc_code_v0(units, wide=is_wide)["iscc"]
    return iscc


def iscc_decode(iscc: str) -> IsccTuple:
    """Decode an ISCC given in any accepted form, after normalizing it.

    Returns:
        ``(maintype, subtype, version, length field, body)``; the length field is raw (see
        :func:`~isccd.iscc.codec.decode_length`).

    Raises:
        IsccError: as :func:`iscc_normalize`.
        TypeError: ``iscc`` is not a ``str``.
    """
    return decode_header(decode_base32(iscc_normalize(iscc)[5:]))
