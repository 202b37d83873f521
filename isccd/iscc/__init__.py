"""The ISCC algorithms of ISO 24138:2024, pure: no I/O, no logging, no settings.

The public names, arguments and results mirror iscc-core 1.5.0 (``gen_text_code_v0(text, bits)``
returns ``{"iscc": ..., "characters": ...}`` and so on); the conformance vectors of iscc-core
1.5.0 pass through :mod:`isccd.iscc.conformance`. Invalid input raises :class:`IsccError` (a
``ValueError``); wrong argument types raise ``TypeError``.
"""

from __future__ import annotations

from isccd.iscc.codec import (
    decode_header,
    decode_length,
    decode_units,
    encode_component,
    encode_header,
    encode_length,
    encode_units,
    iscc_clean,
)
from isccd.iscc.constants import (
    LN,
    MT,
    PREFIXES,
    ST,
    ST_CC,
    ST_ID,
    ST_ID_REALM,
    ST_ISCC,
    SUBTYPE_MAP,
    UNITS,
    VS,
)
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import (
    decode_base32,
    decode_base32hex,
    decode_base64,
    encode_base32,
    encode_base32hex,
    encode_base64,
)

__all__ = [
    "LN",
    "MT",
    "PREFIXES",
    "ST",
    "ST_CC",
    "ST_ID",
    "ST_ID_REALM",
    "ST_ISCC",
    "SUBTYPE_MAP",
    "UNITS",
    "VS",
    "IsccError",
    "decode_base32",
    "decode_base32hex",
    "decode_base64",
    "decode_header",
    "decode_length",
    "decode_units",
    "encode_base32",
    "encode_base32hex",
    "encode_base64",
    "encode_component",
    "encode_header",
    "encode_length",
    "encode_units",
    "iscc_clean",
]
