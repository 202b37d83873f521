"""The header vocabulary of ISO 24138: MainTypes, SubTypes, Versions, Lengths and the tables
that relate them.

The enum names and values are those of iscc-core 1.5.0 (``iscc_core.constants``), so code and
knowledge written against the reference carry over. Pure data: no I/O.
"""

from __future__ import annotations

import enum
import re


class MT(enum.IntEnum):
    """MainType: the first header field, what a unit matches on."""

    META = 0
    """Similarity of the metadata (title, description, meta)."""
    SEMANTIC = 1
    """Semantic similarity of the content (no algorithm in ISO 24138 v0)."""
    CONTENT = 2
    """Perceptual similarity of the content (text, image, audio, video, mixed)."""
    DATA = 3
    """Similarity of the raw bytes."""
    INSTANCE = 4
    """Identity of the raw bytes (BLAKE3)."""
    ISCC = 5
    """A composite ISCC-CODE of two or more units under one header."""
    ID = 6
    """ISCC-ID: a short identifier (v0 legacy, v1 timestamp + HUB)."""
    FLAKE = 7
    """A time-sortable unique identifier."""


class ST(enum.IntEnum):
    """SubType of the MainTypes that have none (META, DATA, INSTANCE, FLAKE)."""

    NONE = 0


class ST_CC(enum.IntEnum):
    """SubType of SEMANTIC and CONTENT units: the kind of content."""

    TEXT = 0
    IMAGE = 1
    AUDIO = 2
    VIDEO = 3
    MIXED = 4


class ST_ISCC(enum.IntEnum):
    """SubType of an ISCC-CODE: the kind of its content unit, or how it is built."""

    TEXT = 0
    IMAGE = 1
    AUDIO = 2
    VIDEO = 3
    MIXED = 4
    SUM = 5
    """Only Data and Instance units."""
    NONE = 6
    """Meta, Data and Instance units (no content unit)."""
    WIDE = 7
    """128-bit Data and 128-bit Instance units."""


class ST_ID(enum.IntEnum):
    """SubType of an ISCC-ID v0: the ledger it was minted on."""

    PRIVATE = 0
    BITCOIN = 1
    ETHEREUM = 2
    POLYGON = 3


class ST_ID_REALM(enum.IntEnum):
    """SubType of an ISCC-ID v1: the HUB network realm."""

    REALM_0 = 0
    """The test network."""
    REALM_1 = 1
    """The first operational network."""


class VS(enum.IntEnum):
    """Version of the algorithm that made a unit."""

    V0 = 0
    V1 = 1


class LN(enum.IntEnum):
    """The body lengths, in bits, that a header may declare."""

    L32 = 32
    L64 = 64
    L72 = 72
    L80 = 80
    L96 = 96
    L128 = 128
    L160 = 160
    L192 = 192
    L224 = 224
    L256 = 256
    L320 = 320


class MULTIBASE(enum.StrEnum):
    """The multibase prefix characters of the multiformat encodings."""

    base16 = "f"
    base32 = "b"
    base32hex = "v"
    base58btc = "z"
    base64url = "u"


#: Optional units of an ISCC-CODE, indexed by the header's Length field (a bit field:
#: META=4, SEMANTIC=2, CONTENT=1). Data and Instance are always present.
UNITS: tuple[tuple[MT, ...], ...] = (
    (),
    (MT.CONTENT,),
    (MT.SEMANTIC,),
    (MT.SEMANTIC, MT.CONTENT),
    (MT.META,),
    (MT.META, MT.CONTENT),
    (MT.META, MT.SEMANTIC),
    (MT.META, MT.SEMANTIC, MT.CONTENT),
)

#: The SubType enum of each legal (MainType, Version) pair.
SUBTYPE_MAP: dict[tuple[MT, VS], type[enum.IntEnum]] = {
    (MT.META, VS.V0): ST,
    (MT.SEMANTIC, VS.V0): ST_CC,
    (MT.CONTENT, VS.V0): ST_CC,
    (MT.DATA, VS.V0): ST,
    (MT.INSTANCE, VS.V0): ST,
    (MT.ISCC, VS.V0): ST_ISCC,
    (MT.ID, VS.V0): ST_ID,
    (MT.ID, VS.V1): ST_ID_REALM,
    (MT.FLAKE, VS.V0): ST,
}

#: The MainTypes whose Length field counts 32-bit words (``bits = (L + 1) * 32``).
UNIT_MAINTYPES: frozenset[MT] = frozenset(
    (MT.META, MT.SEMANTIC, MT.CONTENT, MT.DATA, MT.INSTANCE, MT.FLAKE)
)

#: Body lengths in bits an ISCC-ID can have: 64 bits plus a uvarint counter of 0, 1, 2 or 4
#: bytes (88 bits has no LN value, so no header can declare a 3-byte counter).
ID_BITS: tuple[int, ...] = (64, 72, 80, 96)

#: The MainTypes an ISCC-SEQ may hold (IEP-0020).
SEQ_MAINTYPES: frozenset[MT] = frozenset((MT.META, MT.SEMANTIC, MT.CONTENT, MT.DATA, MT.INSTANCE))

#: Unsigned-varint form of the multicodec 0xcc that starts every multiformat ISCC.
MC_PREFIX: bytes = b"\xcc\x01"

#: The legal first two characters of a canonical base32 ISCC. ``MA`` and ``ME`` are shared by
#: ISCC-ID v0 (PRIVATE, BITCOIN) and v1 (REALM_0, REALM_1); only the Version field tells them
#: apart.
PREFIXES: tuple[str, ...] = (
    "AA",
    "CA",
    "CE",
    "CI",
    "CM",
    "CQ",
    "EA",
    "EE",
    "EI",
    "EM",
    "EQ",
    "GA",
    "IA",
    "KA",
    "KE",
    "KI",
    "KM",
    "KQ",
    "KU",
    "KY",
    "K4",
    "MA",
    "ME",
    "MI",
    "MM",
    "OA",
)

#: The canonical string form: ``ISCC:`` and 10 to 68 upper-case base32 characters (68 is the
#: 320-bit Meta-Semantic-Content-Data-Instance ISCC-CODE).
CANONICAL_REGEX: re.Pattern[str] = re.compile("^ISCC:[A-Z2-7]{10,68}$")
