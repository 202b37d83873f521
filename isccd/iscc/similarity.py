"""How alike two ISCCs are: Hamming distances between units of the same type.

Units of one type are prefix-compatible: the first 64 bits of a 256-bit unit are the 64-bit
unit of the same input. So isccd compares units of different lengths over their common prefix,
where the reference raises. Two further departures from iscc-core 1.5.0, both fixes:

- :func:`iscc_compare` pairs units by each code's own Version (the reference uses the first
  code's Version for both);
- ISCC-ID v1 codes are really compared (the reference compares a code with itself and always
  reports a match).

Pure: no I/O.
"""

from __future__ import annotations

from isccd.iscc.codec import decode_header
from isccd.iscc.constants import MT, SUBTYPE_MAP, VS
from isccd.iscc.decompose import iscc_decompose
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32
from isccd.iscc.normalize import iscc_decode

__all__ = [
    "hamming_distance",
    "iscc_compare",
    "iscc_distance",
    "iscc_distance_bytes",
    "iscc_nph_compare",
    "iscc_nph_distance_bytes",
    "iscc_nph_similarity_bytes",
    "iscc_similarity",
]

#: A decomposed unit: MainType, SubType, Version and body.
_Unit = tuple[int, int, int, bytes]


def hamming_distance(a: bytes, b: bytes) -> int:
    """The number of bits in which two equally long byte strings differ.

    Raises:
        IsccError: the lengths differ.
    """
    if len(a) != len(b):
        raise IsccError(f"digests of unequal length: {len(a)} and {len(b)} bytes")
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).bit_count()


def iscc_distance_bytes(a: bytes, b: bytes) -> int:
    """Hamming distance of two equally long digests (the reference's name for
    :func:`hamming_distance`).

    Raises:
        IsccError: the lengths differ.
    """
    return hamming_distance(a, b)


def _is_id_v1(mt: int, vs: int) -> bool:
    return mt == MT.ID and vs == VS.V1


def _pair_bodies(a: str, b: str) -> tuple[bytes, bytes]:
    """The bodies of two codes of the same type, cut to their common length."""
    fa, fb = iscc_decode(a), iscc_decode(b)
    for mt, _, vs, _, _ in (fa, fb):
        if _is_id_v1(mt, vs):
            raise IsccError("an ISCC-ID v1 is a timestamp; it has no similarity (compare for ==)")
    if fa[:3] != fb[:3]:
        raise IsccError(f"ISCC types differ: {_describe(*fa[:3])} and {_describe(*fb[:3])}")
    if fa[0] == MT.ISCC and fa[3] != fb[3]:
        raise IsccError("ISCC-CODEs hold different units; use iscc_compare")
    n = min(len(fa[4]), len(fb[4]))
    return fa[4][:n], fb[4][:n]


def iscc_distance(a: str, b: str) -> int:
    """Hamming distance of two codes of the same type, over their common length.

    Args:
        a: an ISCC in any accepted form (a unit, an ISCC-CODE, an ISCC-ID v0).
        b: an ISCC of the same MainType, SubType and Version (ISCC-CODEs: the same units).

    Returns:
        The number of differing bits.

    Raises:
        IsccError: malformed codes, codes of different types, or an ISCC-ID v1.
    """
    body_a, body_b = _pair_bodies(a, b)
    return hamming_distance(body_a, body_b)


def iscc_similarity(a: str, b: str) -> int:
    """Similarity of two codes of the same type in percent (0..100, rounded down), over their
    common length.

    Raises:
        IsccError: as :func:`iscc_distance`.
    """
    body_a, body_b = _pair_bodies(a, b)
    nbits = len(body_a) * 8
    return int((nbits - hamming_distance(body_a, body_b)) / nbits * 100)


def _type_key(mt: int, st: int, vs: int) -> str:
    """``MAINTYPE_SUBTYPE_VERSION``, e.g. ``CONTENT_TEXT_V0``."""
    try:
        subtype = SUBTYPE_MAP[(MT(mt), VS(vs))](st).name
    except (KeyError, ValueError):
        raise IsccError(f"no ISCC type has MainType {mt}, SubType {st}, Version {vs}") from None
    return f"{MT(mt).name}_{subtype}_{VS(vs).name}"


def _describe(mt: int, st: int, vs: int) -> str:
    try:
        return _type_key(mt, st, vs)
    except IsccError:
        return f"MainType {mt} SubType {st} Version {vs}"


def _units(iscc: str) -> list[_Unit]:
    units = []
    for unit in iscc_decompose(iscc):
        mt, st, vs, _, body = decode_header(decode_base32(unit))
        units.append((mt, st, vs, body))
    return units


def iscc_compare(a: str, b: str) -> dict[str, int | bool]:
    """Unit-wise comparison of two ISCCs (units, ISCC-CODEs or concatenated units).

    Units pair up when MainType, SubType and Version are equal, and are compared over their
    common length.

    Returns:
        ``<maintype>_dist`` (e.g. ``"content_dist"``) with the Hamming distance of each pair,
        and ``"instance_match"`` for the Instance-Codes; ``{"id_match": bool}`` for two ISCC-ID
        v1. Keys of unpaired types are absent.

    Raises:
        IsccError: malformed codes, or an ISCC-ID v1 compared with anything but an ISCC-ID v1.
    """
    ua, ub = _units(a), _units(b)
    ids_v1 = [unit for unit in ua + ub if _is_id_v1(unit[0], unit[2])]
    if ids_v1:
        if len(ua) == len(ub) == 1 and len(ids_v1) == 2:
            return {"id_match": ua[0] == ub[0]}
        raise IsccError("an ISCC-ID v1 can only be compared with another ISCC-ID v1")
    result: dict[str, int | bool] = {}
    for mta, sta, vsa, body_a in ua:
        for mtb, stb, vsb, body_b in ub:
            if (mta, sta, vsa) != (mtb, stb, vsb):
                continue
            n = min(len(body_a), len(body_b))
            if mta == MT.INSTANCE:
                result["instance_match"] = body_a[:n] == body_b[:n]
            else:
                result[MT(mta).name.lower() + "_dist"] = hamming_distance(body_a[:n], body_b[:n])
    return result


def _nph_distance(a: bytes, b: bytes) -> tuple[float, int]:
    """Share of differing bits in the common prefix, and the prefix length in bits."""
    n = min(len(a), len(b))
    if n == 0:
        return (0.0 if not a and not b else 1.0), 0
    return hamming_distance(a[:n], b[:n]) / (n * 8), n * 8


def iscc_nph_similarity_bytes(a: bytes, b: bytes) -> dict[str, float | int]:
    """Normalized Prefix Hamming similarity: the share of equal bits in the common prefix.

    Returns:
        ``{"similarity": 0.0..1.0, "common_prefix_bits": n}``.
    """
    distance, bits = _nph_distance(a, b)
    return {"similarity": 1.0 - distance, "common_prefix_bits": bits}


def iscc_nph_distance_bytes(a: bytes, b: bytes) -> dict[str, float | int]:
    """Normalized Prefix Hamming distance: the share of differing bits in the common prefix.

    Returns:
        ``{"distance": 0.0..1.0, "common_prefix_bits": n}``.
    """
    distance, bits = _nph_distance(a, b)
    return {"distance": distance, "common_prefix_bits": bits}


def iscc_nph_compare(a: str, b: str) -> dict[str, dict[str, float | int]]:
    """Unit-wise Normalized Prefix Hamming similarity of two ISCCs (ISCC-IDs are skipped).

    Returns:
        ``{"CONTENT_TEXT_V0": {"similarity": 0.98, "common_prefix_bits": 64}, ...}`` for every
        pair of units with equal MainType, SubType and Version. Instance-Codes score 1.0 when
        their common prefixes are equal and 0.0 otherwise.

    Raises:
        IsccError: malformed codes.
    """
    result: dict[str, dict[str, float | int]] = {}
    units_b = _units(b)
    for mta, sta, vsa, body_a in _units(a):
        for mtb, stb, vsb, body_b in units_b:
            if MT.ID in (mta, mtb) or (mta, sta, vsa) != (mtb, stb, vsb):
                continue
            key = _type_key(mta, sta, vsa)
            if mta == MT.INSTANCE:
                n = min(len(body_a), len(body_b))
                match = body_a[:n] == body_b[:n]
                result[key] = {"similarity": 1.0 if match else 0.0, "common_prefix_bits": n * 8}
            else:
                result[key] = iscc_nph_similarity_bytes(body_a, body_b)
    return result
