"""ISCC-ID: a short identifier for a digital asset.

- **v1** (current): 52 bits of microseconds since the Unix epoch and a 12-bit HUB-ID, under a
  header whose SubType is the realm (0 test network, 1 operational).
- **v0** (legacy): a SimHash of the units of an ISCC-CODE, XORed with the SHA-256 of a wallet
  address, optionally followed by a uvarint uniqueness counter; the SubType is the ledger.

This module may read the clock (for the default v1 timestamp) and nothing else.

Reached only through the public API: neither the daemon nor the commands use ISCC-IDs (they are
issued by an ISCC registry, not computed from a file). The module is here so that
:mod:`isccd.iscc` offers what iscc-core 1.5.0 offers; the conformance vectors have no ISCC-ID
entries, so the differential tests against iscc-core (``tests/iscc/test_iscc_id.py``) are what
keeps it right.
"""

from __future__ import annotations

import hashlib
import time

from isccd.iscc.codec import _require_int, decode_header, encode_component, iscc_clean
from isccd.iscc.constants import MT, ST_ID, ST_ID_REALM, VS
from isccd.iscc.decompose import iscc_decompose
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import decode_base32
from isccd.iscc.normalize import iscc_decode
from isccd.iscc.simhash import alg_simhash
from isccd.iscc.varint import decode_uvarint, encode_uvarint

__all__ = [
    "alg_simhash_from_iscc_id",
    "gen_iscc_id",
    "gen_iscc_id_v0",
    "gen_iscc_id_v1",
    "iscc_id_incr",
    "iscc_id_incr_v0",
    "soft_hash_iscc_id_v0",
]

_MAX_TIMESTAMP = 1 << 52
_MAX_HUB_ID = 1 << 12


def gen_iscc_id(timestamp: int | None = None, hub_id: int = 0, realm_id: int = 0) -> dict[str, str]:
    """Generate an ISCC-ID with the current algorithm (v1); see :func:`gen_iscc_id_v1`."""
    return gen_iscc_id_v1(timestamp, hub_id, realm_id)


def gen_iscc_id_v1(
    timestamp: int | None = None, hub_id: int = 0, realm_id: int = 0
) -> dict[str, str]:
    """Generate an ISCC-ID v1 from a timestamp and a HUB-ID.

    Args:
        timestamp: microseconds since 1970-01-01T00:00:00Z, below 2**52 (the year 2112); the
            current time when omitted.
        hub_id: the HUB that issues the ID, 0..4095.
        realm_id: 0 (test network, the default as in the reference) or 1 (operational).

    Returns:
        ``{"iscc": "ISCC:MAI..."}``.

    Raises:
        IsccError: a value out of range.
        TypeError: a value that is not an int.
    """
    if timestamp is None:
        timestamp = time.time_ns() // 1000
    timestamp = _require_int("timestamp", timestamp)
    hub_id = _require_int("hub_id", hub_id)
    realm_id = _require_int("realm_id", realm_id)
    if not 0 <= timestamp < _MAX_TIMESTAMP:
        raise IsccError(f"timestamp must be in 0..2**52-1 microseconds, got {timestamp}")
    if not 0 <= hub_id < _MAX_HUB_ID:
        raise IsccError(f"HUB-ID must be in 0..4095, got {hub_id}")
    if realm_id not in ST_ID_REALM.__members__.values():
        raise IsccError(f"realm ID must be 0 (test) or 1 (operational), got {realm_id}")
    digest = (timestamp << 12 | hub_id).to_bytes(8, "big")
    return {"iscc": "ISCC:" + encode_component(MT.ID, realm_id, VS.V1, 64, digest)}


def _wallet_hash(wallet: str) -> bytes:
    if not isinstance(wallet, str):
        raise TypeError(f"wallet must be a str, got {type(wallet).__name__}")
    try:
        return hashlib.sha256(wallet.encode("ascii")).digest()[:8]
    except UnicodeEncodeError:
        raise IsccError(f"wallet address must be ASCII: {wallet!r}") from None


def soft_hash_iscc_id_v0(iscc_code: str, wallet: str, uc: int = 0) -> bytes:
    """The body of an ISCC-ID v0: SimHash of the units, XOR wallet hash, counter.

    Each unit but the Instance-Code contributes its first header byte and the first 7 bytes of
    its body; a lone Instance-Code contributes itself the same way.

    Raises:
        IsccError: an ISCC-ID as input, a malformed code, a non-ASCII wallet, or units whose
            pieces differ in length (units shorter than 56 bits).
    """
    uc = _require_int("uc", uc)
    if uc < 0:
        raise IsccError(f"uniqueness counter must not be negative, got {uc}")
    wallet_hash = _wallet_hash(wallet)
    raws = [decode_base32(unit) for unit in iscc_decompose(iscc_code)]
    headers = [decode_header(raw) for raw in raws]
    pieces = []
    if len(raws) == 1 and headers[0][0] == MT.INSTANCE:
        pieces.append(raws[0][:1] + headers[0][4][:7])
    else:
        for raw, (mt, *_, body) in zip(raws, headers, strict=True):
            if mt == MT.INSTANCE:
                continue
            if mt == MT.ID:
                raise IsccError("cannot create an ISCC-ID from an ISCC-ID")
            pieces.append(raw[:1] + body[:7])
    if not pieces:
        raise IsccError("an ISCC-ID v0 needs at least one unit besides the Instance-Code")
    digest = bytes(a ^ b for a, b in zip(alg_simhash(pieces), wallet_hash, strict=False))
    return digest + encode_uvarint(uc) if uc else digest


def gen_iscc_id_v0(iscc_code: str, chain_id: int, wallet: str, uc: int = 0) -> dict[str, str]:
    """Generate a legacy ISCC-ID v0 from an ISCC-CODE (or units), a ledger and a wallet.

    Args:
        iscc_code: an ISCC-CODE or concatenated units.
        chain_id: the ledger (:class:`ST_ID`): 0 private, 1 Bitcoin, 2 Ethereum, 3 Polygon.
        wallet: the ASCII wallet address that signs the declaration.
        uc: the uniqueness counter; 0 means none. The header can only declare counters of 1,
            2 or 4 uvarint bytes, so values from 16384 to 2**21-1 and from 2**28 are refused.

    Returns:
        ``{"iscc": "ISCC:MA..."}``.

    Raises:
        IsccError: see :func:`soft_hash_iscc_id_v0`; an unknown chain; a counter the header
            cannot declare.
    """
    chain_id = _require_int("chain_id", chain_id)
    if chain_id not in ST_ID.__members__.values():
        raise IsccError(
            f"chain ID must be one of 0..3 (private, Bitcoin, Ethereum, Polygon), got {chain_id}"
        )
    digest = soft_hash_iscc_id_v0(iscc_code, wallet, uc)
    code = encode_component(MT.ID, chain_id, VS.V0, len(digest) * 8, digest)
    return {"iscc": "ISCC:" + code}


def iscc_id_incr_v0(iscc_id: str) -> str:
    """Add a uniqueness counter of 1 to an ISCC-ID v0, or increment its counter.

    Returns:
        The new ISCC-ID, without the ``ISCC:`` prefix (as the reference).

    Raises:
        IsccError: not an ISCC-ID v0, or a counter the header cannot declare.
    """
    mt, st, vs, _, body = decode_header(decode_base32(iscc_clean(iscc_id)))
    if mt != MT.ID:
        raise IsccError(f"MainType {mt} is not ISCC-ID")
    if vs != VS.V0:
        raise IsccError(f"Version {vs} is not v0")
    if len(body) < 8:
        raise IsccError(f"truncated ISCC-ID: {len(body)} body bytes")
    counter = decode_uvarint(body[8:])[0] if len(body) > 8 else 0
    data = body[:8] + encode_uvarint(counter + 1)
    return encode_component(mt, st, vs, len(data) * 8, data)


def iscc_id_incr(iscc_id: str) -> str:
    """Increment the uniqueness counter of an ISCC-ID (v0 only; v1 IDs are timestamps).

    Raises:
        IsccError: not an ISCC-ID, or an ISCC-ID v1.
    """
    mt, _, vs, _, _ = decode_header(decode_base32(iscc_clean(iscc_id)))
    if mt != MT.ID:
        raise IsccError(f"MainType {mt} is not ISCC-ID")
    if vs == VS.V1:
        raise IsccError("ISCC-ID v1 has no uniqueness counter (it is a timestamp)")
    return iscc_id_incr_v0(iscc_id)


def alg_simhash_from_iscc_id(iscc_id: str, wallet: str) -> str:
    """Recover the SimHash of an ISCC-ID v0 by undoing the wallet XOR.

    Returns:
        The 64-bit SimHash in hex.

    Raises:
        IsccError: a malformed ISCC-ID or a non-ASCII wallet.
    """
    wallet_hash = _wallet_hash(wallet)
    body = iscc_decode(iscc_clean(iscc_id))[4]
    return bytes(a ^ b for a, b in zip(body[:8], wallet_hash, strict=False)).hex()
