"""Human-readable forms of an ISCC: its type id (``CONTENT-TEXT-V0-64``) and its explanation
(the type id followed by the body in hex, or the timestamp and HUB of an ISCC-ID v1).

Pure: no I/O.
"""

from __future__ import annotations

import datetime

from isccd.iscc.codec import IsccTuple, decode_length, decode_units
from isccd.iscc.constants import MT, SUBTYPE_MAP, VS
from isccd.iscc.exceptions import IsccError
from isccd.iscc.normalize import iscc_decode
from isccd.iscc.varint import decode_uvarint

__all__ = ["iscc_explain", "iscc_type_id"]


def _type_id(fields: IsccTuple) -> str:
    mt, st, vs, ln, _ = fields
    try:
        subtypes = SUBTYPE_MAP[(MT(mt), VS(vs))]
    except (KeyError, ValueError):
        raise IsccError(f"no ISCC type has MainType {mt} and Version {vs}") from None
    try:
        stype = subtypes(st)
    except ValueError:
        raise IsccError(f"SubType {st} is not defined for {MT(mt).name} {VS(vs).name}") from None
    if mt == MT.ISCC:
        length = "".join(t.name[0] for t in decode_units(ln)) + "DI"
    else:
        length = str(int(decode_length(mt, ln)))
    return f"{MT(mt).name}-{stype.name}-{VS(vs).name}-{length}"


def iscc_type_id(iscc: str) -> str:
    """The type of an ISCC as ``MAINTYPE-SUBTYPE-VERSION-LENGTH``.

    LENGTH is the body in bits for units and ISCC-IDs, and the unit letters for an ISCC-CODE
    (``ISCC-IMAGE-V0-MCDI``: Meta, Content, Data, Instance). Type ids can name the per-type
    tables of an index.

    Raises:
        IsccError: a malformed ISCC, or header values that name no type.
        TypeError: ``iscc`` is not a ``str``.
    """
    return _type_id(iscc_decode(iscc))


def iscc_explain(iscc: str) -> str:
    """Explain an ISCC: its type id and its body.

    - units and ISCC-CODEs: ``CONTENT-TEXT-V0-64-250db96e0d4a17a0``;
    - ISCC-ID v0 with a uniqueness counter: ``ID-PRIVATE-V0-72-<64-bit hex>-<counter>``;
    - ISCC-ID v1: ``ID-REALM_0-V1-64-2024-04-30T18:52:03.456789Z-HUB_42``.

    Raises:
        IsccError: as :func:`iscc_type_id`, or an ISCC-ID v1 whose body is not 64 bits.
        TypeError: ``iscc`` is not a ``str``.
    """
    fields = iscc_decode(iscc)
    tid = _type_id(fields)
    mt, st, vs, _, body = fields
    if mt == MT.ID and vs == VS.V1:
        if len(body) != 8:
            raise IsccError(f"an ISCC-ID v1 has a 64-bit body, this one has {len(body) * 8} bits")
        value = int.from_bytes(body, "big")
        hub_id, timestamp = value & 0xFFF, value >> 12
        seconds, micros = divmod(timestamp, 1_000_000)
        when = datetime.datetime.fromtimestamp(seconds, datetime.UTC).replace(microsecond=micros)
        iso = when.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return f"ID-REALM_{st}-V1-64-{iso}-HUB_{hub_id}"
    if mt == MT.ID and len(body) > 8:
        counter, _ = decode_uvarint(body[8:])
        return f"{tid}-{body[:8].hex()}-{counter}"
    return f"{tid}-{body.hex()}"
