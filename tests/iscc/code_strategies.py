"""Hypothesis strategies for ISCC codes, all built with the reference (iscc-core 1.5.0) so that the
codes under test do not come from the code under test.

Also an independent oracle, :func:`structural_defect`, that says why isccd may refuse a string
the reference decodes: it walks the bytes with the reference's own primitives.
"""

from __future__ import annotations

import iscc_core as ic
from hypothesis import strategies as st

UNIT_TYPES = (ic.MT.META, ic.MT.SEMANTIC, ic.MT.CONTENT, ic.MT.DATA, ic.MT.INSTANCE)
UNIT_BITS = tuple(range(32, 257, 32))
ID_BITS = (64, 72, 80, 96)

#: The SubTypes each unit MainType defines.
SUBTYPES = {
    ic.MT.META: (0,),
    ic.MT.SEMANTIC: tuple(range(5)),
    ic.MT.CONTENT: tuple(range(5)),
    ic.MT.DATA: (0,),
    ic.MT.INSTANCE: (0,),
}

#: Uniqueness counters whose uvarint is 1, 2 or 4 bytes (the lengths an ISCC-ID header can say).
ID_COUNTERS = st.one_of(st.just(0), st.integers(1, 16383), st.integers(2**21, 2**28 - 1))

WALLETS = st.text(
    alphabet="123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0x", max_size=44
)


@st.composite
def units(draw: st.DrawFn, mtypes: tuple[int, ...] = UNIT_TYPES, min_bits: int = 32) -> str:
    """A valid ISCC-UNIT, bare base32 (no ``ISCC:``), as the reference encodes it."""
    mt = draw(st.sampled_from(mtypes))
    stype = draw(st.sampled_from(SUBTYPES[ic.MT(mt)]))
    bits = draw(st.sampled_from([b for b in UNIT_BITS if b >= min_bits]))
    digest = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
    code: str = ic.encode_component(mt, stype, ic.VS.V0, bits, digest)
    return code


@st.composite
def iscc_codes(draw: st.DrawFn) -> str:
    """A valid ISCC-CODE (``ISCC:K...``) from random units, including WIDE ones."""
    if draw(st.booleans()) and draw(st.booleans()):
        data = draw(units((ic.MT.DATA,), min_bits=128))
        instance = draw(units((ic.MT.INSTANCE,), min_bits=128))
        code: str = ic.gen_iscc_code_v0([data, instance], wide=True)["iscc"]
        return code
    parts = [draw(units((ic.MT.DATA,), 64)), draw(units((ic.MT.INSTANCE,), 64))]
    if draw(st.booleans()):
        parts.append(draw(units((ic.MT.META,), 64)))
    content_st = draw(st.sampled_from(range(5)))
    for mt in (ic.MT.SEMANTIC, ic.MT.CONTENT):
        if draw(st.booleans()):
            bits = draw(st.sampled_from(UNIT_BITS[1:]))
            digest = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
            parts.append(ic.encode_component(mt, content_st, ic.VS.V0, bits, digest))
    order = draw(st.permutations(parts))
    return str(ic.gen_iscc_code_v0(order)["iscc"])


@st.composite
def iscc_ids(draw: st.DrawFn) -> str:
    """A valid ISCC-ID, v1 or (legacy) v0 with or without a counter."""
    if draw(st.booleans()):
        code: str = ic.gen_iscc_id_v1(
            draw(st.integers(0, 2**52 - 1)), draw(st.integers(0, 4095)), draw(st.integers(0, 1))
        )["iscc"]
        return code
    source = draw(st.one_of(iscc_codes(), units(min_bits=64)))
    args = (draw(st.integers(0, 3)), draw(WALLETS), draw(ID_COUNTERS))
    return str(ic.gen_iscc_id_v0(source, *args)["iscc"])


@st.composite
def flake_codes(draw: st.DrawFn) -> str:
    """A Flake-Code, built from random bytes (Flakes are not reproducible otherwise)."""
    bits = draw(st.sampled_from(UNIT_BITS[1:]))
    digest = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
    code: str = ic.encode_component(ic.MT.FLAKE, 0, ic.VS.V0, bits, digest)
    return code


def canonical(code: str) -> str:
    """``ISCC:`` + the bare code."""
    return code if code.startswith("ISCC:") else "ISCC:" + code


#: Any valid code, canonical (``ISCC:...``).
valid_codes = st.one_of(
    units().map(canonical), iscc_codes(), iscc_ids(), flake_codes().map(canonical)
)


@st.composite
def code_forms(draw: st.DrawFn) -> str:
    """A valid code in one of the accepted spellings: canonical, bare, URI, hyphenated,
    surrounding whitespace, or multiformat (f, b, v, z, u)."""
    code = draw(valid_codes)
    bare = code.removeprefix("ISCC:")
    obj = ic.Code(bare)
    form = draw(st.sampled_from(["canonical", "bare", "uri", "hyphens", "space", "mf"]))
    if form == "bare":
        return bare
    if form == "uri":
        return "iscc:" + bare.lower()
    if form == "hyphens":
        cut = draw(st.integers(1, len(bare) - 1))
        return f"ISCC:{bare[:cut]}-{bare[cut:]}"
    if form == "space":
        return f"  {code}\n"
    if form == "mf":
        mf: str = getattr(
            obj,
            draw(
                st.sampled_from(
                    ["mf_base16", "mf_base32", "mf_base32hex", "mf_base58btc", "mf_base64url"]
                )
            ),
        )
        return mf
    return code


@st.composite
def near_codes(draw: st.DrawFn) -> str:
    """Base32 of a plausible header (fields mostly small, sometimes multi-nibble) and a body of a
    length near what the header declares: the inputs where decoders disagree if they ever do."""
    small = st.integers(0, 9)
    fields = [
        draw(st.one_of(st.integers(0, 7), st.integers(0, 4679))),
        draw(st.one_of(small, st.integers(0, 4679))),
        draw(st.one_of(st.integers(0, 1), st.integers(0, 80))),
        draw(st.one_of(small, st.integers(0, 600))),
    ]
    header = ic.encode_header(*fields)
    body = draw(st.binary(min_size=0, max_size=48))
    if draw(st.booleans()):
        body += ic.encode_header(*draw(st.tuples(small, small, small, small))) + draw(
            st.binary(max_size=40)
        )
    prefix = draw(st.sampled_from(["ISCC:", "", "iscc:"]))
    code: str = prefix + ic.encode_base32(header + body)
    return code


def structural_defect(code: str) -> str | None:
    """Why isccd refuses ``code`` although the reference decodes it, or ``None``.

    Walks the bytes with the reference's primitives and names the first thing isccd documents
    it refuses: a unit body cut short, a unit over 256 bits, an ISCC-ID length other than 64,
    72, 80 or 96 bits, bytes after an ISCC-CODE, or an ISCC-CODE of a version other than 0
    (none is defined; the reference silently recomposes it as version 0).
    """
    try:
        raw = ic.decode_base32(ic.normalize_multiformat(code))
    except Exception:
        return None
    while raw:
        try:
            mt, stype, version, ln, tail = ic.decode_header(raw)
            nbits = int(ic.decode_length(mt, ln, stype))
        except Exception:
            return None
        nbytes = nbits // 8
        defects = [
            (len(tail) < nbytes, "truncated body"),
            (mt in (*UNIT_TYPES, ic.MT.FLAKE) and nbits > 256, "unit over 256 bits"),
            (mt == ic.MT.ID and nbits not in ID_BITS, "ISCC-ID length"),
            (mt == ic.MT.ISCC and len(tail) > nbytes, "bytes after ISCC-CODE"),
            (mt == ic.MT.ISCC and version != ic.VS.V0, "ISCC-CODE version"),
        ]
        for found, reason in defects:
            if found:
                return reason
        if mt == ic.MT.ISCC:
            break
        raw = tail[nbytes:]
    return None
