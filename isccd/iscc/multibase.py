"""The text encodings of ISCC codes: RFC 4648 base32, base32hex, base64url and base16, and the
Bitcoin base58 alphabet, all without padding.

Encoders take bytes and return ``str``; decoders take ``str`` and return ``bytes`` and raise
:class:`~isccd.iscc.exceptions.IsccError` for malformed text. Pure: no I/O.
"""

from __future__ import annotations

import base64

from isccd.iscc.exceptions import IsccError

__all__ = [
    "decode_base16",
    "decode_base32",
    "decode_base32hex",
    "decode_base58",
    "decode_base64",
    "encode_base16",
    "encode_base32",
    "encode_base32hex",
    "encode_base58",
    "encode_base64",
]

_B32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
#: The two characters of every 10-bit value.
_B32_PAIRS = [first + second for first in _B32_ALPHABET for second in _B32_ALPHABET]
#: Inputs up to this many bytes are encoded as one number (longer ones would make the shifts
#: of a big number quadratic).
_B32_SHORT = 64
_B32_TO_HEX = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHIJKLMNOPQRSTUV")
_B32_TO_NUMERAL = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567abcdefghijklmnopqrstuvwxyz",
    "0123456789ABCDEFGHIJKLMNOPQRSTUV0123456789ABCDEFGHIJKLMNOP",
)
_HEX_TO_B32 = str.maketrans("0123456789ABCDEFGHIJKLMNOPQRSTUV", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_B32_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567abcdefghijklmnopqrstuvwxyz")
#: Unpadded base32 lengths (mod 8) that no byte string encodes to.
_B32_IMPOSSIBLE_LENGTHS = frozenset((1, 3, 6))
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58_ALPHABET)}
_B64URL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _require_str(code: object) -> str:
    if not isinstance(code, str):
        raise TypeError(f"expected a str, got {type(code).__name__}")
    return code


def encode_base32(data: bytes) -> str:
    """RFC 4648 base32 (``A-Z2-7``), upper case, without padding."""
    if len(data) == 10:
        # A 64-bit unit and its header, the most common code: 80 bits are 16 characters, no
        # padding, the pairs written out and joined at once (0.61 -> 0.47 µs; adding them up
        # one by one makes a string per pair).
        v, p = int.from_bytes(data, "big"), _B32_PAIRS
        return "".join(
            (
                p[v >> 70],
                p[v >> 60 & 0x3FF],
                p[v >> 50 & 0x3FF],
                p[v >> 40 & 0x3FF],
                p[v >> 30 & 0x3FF],
                p[v >> 20 & 0x3FF],
                p[v >> 10 & 0x3FF],
                p[v & 0x3FF],
            )
        )
    if len(data) > _B32_SHORT:
        return base64.b32encode(data).decode("ascii").rstrip("=")
    # A code is a few dozen bytes: read as one number, it encodes two to three times faster
    # than the stdlib's pure-Python five-byte loop. It is cut into 30-bit groups of three
    # pairs of characters: arithmetic on an int of one 30-bit digit is the interpreter's
    # fastest (an ISCC-CODE of four units 2.1 -> 1.8 µs, of two 1.4 -> 1.1).
    nbits = 8 * len(data)
    nchars = -(-nbits // 5)
    width = 30 * -(-nchars // 6)  # whole groups of three pairs
    value = int.from_bytes(data, "big") << (width - nbits)
    pairs, p = [], _B32_PAIRS
    for shift in range(width - 30, -1, -30):
        group = value >> shift & 0x3FFFFFFF
        pairs.append(p[group >> 20])
        pairs.append(p[group >> 10 & 0x3FF])
        pairs.append(p[group & 0x3FF])
    return "".join(pairs)[:nchars]


def decode_base32(code: str) -> bytes:
    """Decode RFC 4648 base32 without padding, ignoring case.

    Raises:
        IsccError: ``code`` has characters outside the alphabet or an impossible length.
        TypeError: ``code`` is not a ``str``.
    """
    code = _require_str(code)
    if not _B32_CHARS.issuperset(code):
        bad = "".join(sorted(set(code) - _B32_CHARS))
        raise IsccError(f"malformed base32 {code!r}: invalid characters {bad!r}")
    if len(code) % 8 in _B32_IMPOSSIBLE_LENGTHS:
        raise IsccError(f"malformed base32 {code!r}: no byte string encodes to {len(code)} chars")
    # Translated to base32hex, the text is a base-32 numeral that int() parses in C, several
    # times faster than the stdlib's pure-Python b32decode. Unused trailing bits are dropped,
    # as RFC 4648 decoders (and the reference) do.
    if not code:
        return b""
    nbits = 5 * len(code)
    nbytes = nbits // 8
    value = int(code.translate(_B32_TO_NUMERAL), 32)
    return (value >> (nbits - 8 * nbytes)).to_bytes(nbytes, "big")


def encode_base32hex(data: bytes) -> str:
    """RFC 4648 base32hex ("extended hex", ``0-9A-V``), upper case, without padding."""
    return encode_base32(data).translate(_B32_TO_HEX)


def decode_base32hex(code: str) -> bytes:
    """Decode RFC 4648 base32hex without padding, ignoring case.

    Raises:
        IsccError: malformed base32hex.
        TypeError: ``code`` is not a ``str``.
    """
    code = _require_str(code).upper()
    if any(c in "WXYZ" for c in code):
        # These are legal base32 characters and would slip through the translation.
        raise IsccError(f"malformed base32hex {code!r}")
    return decode_base32(code.translate(_HEX_TO_B32))


def encode_base16(data: bytes) -> str:
    """Lower-case hexadecimal."""
    return data.hex()


def decode_base16(code: str) -> bytes:
    """Decode hexadecimal, ignoring case.

    Raises:
        IsccError: an odd number of digits or a non-hex character.
        TypeError: ``code`` is not a ``str``.
    """
    try:
        return bytes.fromhex(_require_str(code))
    except ValueError as e:
        raise IsccError(f"malformed base16 {code!r}: {e}") from None


def encode_base64(data: bytes) -> str:
    """RFC 4648 base64url (``A-Za-z0-9-_``) without padding."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def decode_base64(code: str) -> bytes:
    """Decode RFC 4648 base64url without padding.

    Raises:
        IsccError: characters outside the alphabet or an impossible length.
        TypeError: ``code`` is not a ``str``.
    """
    code = _require_str(code)
    if not _B64URL_CHARS.issuperset(code) or len(code) % 4 == 1:
        raise IsccError(f"malformed base64url {code!r}")
    return base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))


def encode_base58(data: bytes) -> str:
    """Base58 with the Bitcoin alphabet (``base58btc``); each leading zero byte becomes ``1``."""
    zeros = len(data) - len(data.lstrip(b"\0"))
    n = int.from_bytes(data, "big")
    digits = []
    while n:
        n, r = divmod(n, 58)
        digits.append(_B58_ALPHABET[r])
    return "1" * zeros + "".join(reversed(digits))


def decode_base58(code: str) -> bytes:
    """Decode base58 with the Bitcoin alphabet.

    Raises:
        IsccError: a character outside the alphabet.
        TypeError: ``code`` is not a ``str``.
    """
    code = _require_str(code)
    n = 0
    for c in code:
        digit = _B58_INDEX.get(c)
        if digit is None:
            raise IsccError(f"malformed base58 {code!r}: invalid character {c!r}")
        n = n * 58 + digit
    zeros = len(code) - len(code.lstrip("1"))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * zeros + body
