"""Multiformat ISCC strings: a multibase prefix character and the encoding of the multicodec
``0xCC01`` followed by the ISCC bytes (``f`` base16, ``b`` base32, ``v`` base32hex, ``z``
base58btc, ``u`` base64url).

For ``ISCC:EAASKDNZNYGUUF5A``::

    f  fcc012001250db96e0d4a17a0
    b  bzqasaajfbw4w4dkkc6qa
    v  vpg0i00951msms3aa2ug0
    z  z4rHXCkLKrAH69UZ4T
    u  uzAEgASUNuW4NSheg

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from isccd.iscc.codec import iscc_clean
from isccd.iscc.constants import MC_PREFIX, MULTIBASE
from isccd.iscc.exceptions import IsccError
from isccd.iscc.multibase import (
    decode_base16,
    decode_base32,
    decode_base32hex,
    decode_base58,
    decode_base64,
    encode_base16,
    encode_base32,
    encode_base32hex,
    encode_base58,
    encode_base64,
)

__all__ = ["encode_multiformat", "normalize_multiformat"]

_DECODERS: dict[str, Callable[[str], bytes]] = {
    MULTIBASE.base16: decode_base16,
    MULTIBASE.base32: decode_base32,
    MULTIBASE.base32hex: decode_base32hex,
    MULTIBASE.base58btc: decode_base58,
    MULTIBASE.base64url: decode_base64,
}

_ENCODERS: dict[str, Callable[[bytes], str]] = {
    MULTIBASE.base16: encode_base16,
    MULTIBASE.base32: lambda data: encode_base32(data).lower(),
    MULTIBASE.base32hex: lambda data: encode_base32hex(data).lower(),
    MULTIBASE.base58btc: encode_base58,
    MULTIBASE.base64url: encode_base64,
}


def normalize_multiformat(iscc_code: str) -> str:
    """Turn a multiformat ISCC into plain base32 (no ``ISCC:`` prefix).

    Any other string is returned cleaned (see :func:`~isccd.iscc.codec.iscc_clean`) and
    otherwise unchanged; a string counts as multiformat when it starts with one of ``f b v z u``.

    Raises:
        IsccError: malformed multibase text, or decoded bytes that do not start with the ISCC
            multicodec ``0xCC01``.
        TypeError: ``iscc_code`` is not a ``str``.
    """
    code = iscc_clean(iscc_code)
    if not code:
        raise IsccError("empty ISCC string")
    decoder = _DECODERS.get(code[0])
    if decoder is None:
        return code
    raw = decoder(code[1:])
    if not raw.startswith(MC_PREFIX):
        raise IsccError(f"malformed multiformat codec: {raw[:2].hex() or 'empty'} (expected cc01)")
    return encode_base32(raw[2:])


def encode_multiformat(iscc_code: str, base: str = MULTIBASE.base32) -> str:
    """Encode an ISCC (in any accepted form) as a multiformat string.

    Args:
        iscc_code: an ISCC string, canonical, URI or multiformat.
        base: the multibase prefix character, one of ``f b v z u`` (or a :class:`MULTIBASE`).

    Returns:
        The multiformat string; base16, base32 and base32hex are lower case.

    Raises:
        IsccError: an unknown base or a malformed ISCC string.
        TypeError: ``iscc_code`` is not a ``str``.
    """
    encoder = _ENCODERS.get(base)
    if encoder is None:
        raise IsccError(f"unknown multibase {base!r}; use one of f, b, v, z, u")
    raw = decode_base32(normalize_multiformat(iscc_code))
    if not raw:
        raise IsccError("empty ISCC string")
    return base + encoder(MC_PREFIX + raw)
