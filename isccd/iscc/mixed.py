"""Mixed-Code (ISO 24138 Content-Code, SubType MIXED): one similarity hash of the Content-Codes
of the parts of a multimedia asset (the images in a document, the audio of a video, ...).

Each input Content-Code contributes its first header byte (MainType and SubType) followed by
the first ``bits / 8 - 1`` bytes of its body; the Mixed-Code is the SimHash of these.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import (
    MT,
    ST_CC,
    VS,
    decode_base32,
    decode_header,
    decode_length,
    encode_component,
    iscc_clean,
)
from isccd.iscc.exceptions import IsccError
from isccd.iscc.simhash import alg_simhash

__all__ = ["MixedCode", "gen_mixed_code", "gen_mixed_code_v0", "soft_hash_codes_v0"]


class MixedCode(TypedDict):
    """Result of :func:`gen_mixed_code_v0` (a plain dict at run time)."""

    iscc: str
    parts: list[str]


def soft_hash_codes_v0(cc_digests: Sequence[bytes], bits: int = 64) -> bytes:
    """SimHash of Content-Codes given as raw ``header || body`` bytes.

    Args:
        cc_digests: two or more Content-Codes (any SubType, MIXED included), each with a body of
            at least ``bits``.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``bits / 8`` bytes.

    Raises:
        IsccError: fewer than two codes, a code that is not a Content-Code, a body shorter than
            ``bits`` or than its header declares, or ``bits`` out of range.
        TypeError: ``bits`` is not an int, or a code is not bytes.
    """
    bits = require_unit_bits(bits)
    if isinstance(cc_digests, bytes | bytearray | memoryview | str):
        raise TypeError(f"cc_digests must be a sequence of codes, not {type(cc_digests).__name__}")
    if len(cc_digests) < 2:
        raise IsccError("the Mixed-Code needs at least 2 Content-Codes")
    nbytes = bits // 8
    parts = []
    for raw in cc_digests:
        mtype, _stype, _version, length, body = decode_header(raw)
        if mtype != MT.CONTENT:
            raise IsccError(f"the Mixed-Code takes Content-Codes only, got MainType {mtype}")
        unit_bits = decode_length(mtype, length)
        if len(body) * 8 < unit_bits:
            raise IsccError(f"truncated Content-Code: {len(body) * 8} of {unit_bits} bits")
        if unit_bits < bits:
            raise IsccError(f"a {unit_bits}-bit Content-Code is too short for a {bits}-bit code")
        parts.append(bytes(raw[:1]) + body[: nbytes - 1])
    return alg_simhash(parts)


def gen_mixed_code_v0(codes: Sequence[str], bits: int = 64) -> MixedCode:
    """Mixed-Code of the Content-Codes of an asset's parts.

    Args:
        codes: two or more Content-Codes as strings (``ISCC:`` prefix and hyphens allowed), each
            at least ``bits`` long.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:EQ...", "parts": list(codes)}``.

    Raises:
        IsccError: see :func:`soft_hash_codes_v0`; also a code that does not decode.
        TypeError: ``codes`` is a single string, or a code is not a string.
    """
    bits = require_unit_bits(bits)
    if isinstance(codes, str):
        raise TypeError("codes must be a sequence of ISCC strings, not one str")
    parts = list(codes)
    digest = soft_hash_codes_v0([decode_base32(iscc_clean(code)) for code in parts], bits)
    code = encode_component(MT.CONTENT, ST_CC.MIXED, VS.V0, bits, digest)
    return {"iscc": "ISCC:" + code, "parts": parts}


def gen_mixed_code(codes: Sequence[str], bits: int = 64) -> MixedCode:
    """Mixed-Code with the latest algorithm (v0); see :func:`gen_mixed_code_v0`."""
    return gen_mixed_code_v0(codes, bits)
