"""Meta-Code (ISO 24138 MainType META): a similarity hash of an asset's name and, for
disambiguation, its description or its extended metadata.

- The name is cleaned for display (:func:`~isccd.iscc.textnorm.text_clean`), put on one line
  and trimmed to 128 UTF-8 bytes; it must not end up empty. The description is cleaned and
  trimmed to 4096 bytes (line breaks kept).
- The digest is the SimHash of the BLAKE3 hashes of the 3-character n-grams of the collapsed
  name (:func:`~isccd.iscc.textnorm.text_collapse`). With a description, or with ``meta``, a
  second SimHash (of the description's n-grams, or of the 4-byte n-grams of the metadata bytes)
  is interleaved with it in 32-bit chunks.
- ``meta`` is a dict (hashed as RFC 8785 canonical JSON, returned as a base64 data-URL) or a
  base64 data-URL; when present it replaces the description in the digest and in ``metahash``.
- ``metahash`` is the BLAKE3 multihash of what was hashed: the metadata bytes, or
  ``name + " " + description``.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from blake3 import blake3

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import MT, ST, VS, encode_component
from isccd.iscc.dataurl import decode_data_url, encode_data_url
from isccd.iscc.exceptions import IsccError
from isccd.iscc.instance import MULTIHASH_BLAKE3
from isccd.iscc.jcs import canonicalize
from isccd.iscc.simhash import simhash_joined
from isccd.iscc.textnorm import (
    sliding_window,
    text_clean,
    text_collapse,
    text_remove_newlines,
    text_trim,
)

__all__ = [
    "META_NGRAM_SIZE_BYTES",
    "META_NGRAM_SIZE_TEXT",
    "META_TRIM_DESCRIPTION",
    "META_TRIM_META",
    "META_TRIM_NAME",
    "MetaCode",
    "gen_meta_code",
    "gen_meta_code_v0",
    "meta_digest",
    "meta_name",
    "soft_hash_meta_v0",
]

#: UTF-8 byte budget of the name.
META_TRIM_NAME = 128
#: UTF-8 byte budget of the description.
META_TRIM_DESCRIPTION = 4096
#: Largest metadata payload in bytes (larger ones are refused, never cut).
META_TRIM_META = 128_000
#: n-gram width over the characters of collapsed text.
META_NGRAM_SIZE_TEXT = 3
#: n-gram width over metadata bytes.
META_NGRAM_SIZE_BYTES = 4
#: The multihash prefix of a BLAKE3 digest, in hex.
_MULTIHASH_PREFIX = MULTIHASH_BLAKE3.hex()


class MetaCode(TypedDict):
    """Result of :func:`gen_meta_code_v0` (a plain dict at run time)."""

    iscc: str
    name: str
    description: NotRequired[str]
    """Present when the cleaned description is not empty."""
    meta: NotRequired[str]
    """Present when ``meta`` was given: the metadata as a data-URL."""
    metahash: str


def _simhash_of(digests: list[bytes]) -> bytes:
    # BLAKE3 digests: one or more (sliding_window yields at least one n-gram), 32 bytes each.
    return simhash_joined(b"".join(digests), len(digests), 32)


def _text_simhash(text: str) -> bytes:
    collapsed = text_collapse(text)
    if collapsed.isascii():
        # A byte per character: the n-grams are slices of the encoded text (what
        # sliding_window gives, one window for a shorter text), not each encoded.
        data, width = collapsed.encode("ascii"), META_NGRAM_SIZE_TEXT
        ends = range(width, max(len(data), width) + 1)
        return _simhash_of([blake3(data[end - width : end]).digest() for end in ends])
    ngrams = sliding_window(collapsed, META_NGRAM_SIZE_TEXT)
    return _simhash_of([blake3(ngram.encode("utf-8")).digest() for ngram in ngrams])


def _bytes_simhash(data: bytes) -> bytes:
    ngrams = sliding_window(data, META_NGRAM_SIZE_BYTES)
    return _simhash_of([blake3(ngram).digest() for ngram in ngrams])


def soft_hash_meta_v0(name: str, extra: str | bytes | None = None) -> bytes:
    """256-bit similarity digest of a name and optional extra metadata.

    Args:
        name: the name; collapsed here, but not cleaned or trimmed (that is the caller's job,
            as :func:`gen_meta_code_v0` does).
        extra: a description (``str``, collapsed and hashed per character) or serialized
            metadata (``bytes``, hashed per byte). ``None``, ``""`` or ``b""`` for none.

    Returns:
        32 bytes: the name's SimHash alone without ``extra``; otherwise the first 16 bytes of the
        name's and of the extra's SimHash, interleaved in 4-byte chunks.

    Raises:
        TypeError: ``name`` is not a ``str``, or ``extra`` is not ``str``, bytes-like or None.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be str, got {type(name).__name__}")
    name_digest = _text_simhash(name)
    if isinstance(extra, str):
        if not extra:
            return name_digest
        extra_digest = _text_simhash(extra)
    elif isinstance(extra, bytes | bytearray | memoryview):
        if not extra:
            return name_digest
        extra_digest = _bytes_simhash(bytes(extra))
    elif extra is None:
        return name_digest
    else:
        raise TypeError(f"extra must be str, bytes or None, got {type(extra).__name__}")
    return b"".join(name_digest[i : i + 4] + extra_digest[i : i + 4] for i in range(0, 16, 4))


def _multihash(data: bytes) -> str:
    return _MULTIHASH_PREFIX + blake3(data).hexdigest()


def meta_name(name: str) -> str:
    """The name as the Meta-Code uses it: cleaned, on one line, trimmed to
    :data:`META_TRIM_NAME` UTF-8 bytes (empty when nothing is left)."""
    if (
        isinstance(name, str)
        and len(name) <= META_TRIM_NAME
        and name.isascii()
        and name.isprintable()
    ):
        # One line without a control character, short enough (a byte per character): cleaning
        # strips it, and only runs of spaces are left to join.
        return " ".join(name.split())
    return text_trim(text_remove_newlines(text_clean(name)), META_TRIM_NAME)


def gen_meta_code_v0(
    name: str | None,
    description: str | None = None,
    meta: dict[str, Any] | str | None = None,
    bits: int = 64,
) -> MetaCode:
    """Meta-Code of an asset's name and description or extended metadata.

    Args:
        name: the name or title; must keep at least one character after cleaning.
        description: optional text for disambiguation. Ignored for the digest and ``metahash``
            when ``meta`` is given, but still returned.
        meta: optional extended metadata: a JSON-compatible dict (canonicalized with RFC 8785;
            a top-level ``@context`` key makes it JSON-LD), or a base64 data-URL whose decoded
            bytes are hashed as they are. An empty dict or string counts as none. At most
            128,000 bytes after encoding.
        bits: a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc", "name", ["description"], ["meta"], "metahash"}``: the code, the cleaned name,
        the cleaned description if not empty, the metadata as a data-URL if given (a data-URL
        input is returned unchanged), and the BLAKE3 multihash (hex) of what was hashed.

    Raises:
        IsccError: the name is empty after cleaning; ``meta`` is a string but not a base64
            data-URL; the metadata is over 128,000 bytes or not valid JSON data (a NaN or
            infinite float, an int beyond the double range, a lone surrogate, a container
            inside itself); ``bits`` out of range.
        TypeError: ``name`` or ``description`` is not a ``str`` (or None), ``meta`` is not a
            dict, a ``str`` or None or holds a non-JSON type, or ``bits`` is not an int.
    """
    bits = require_unit_bits(bits)
    digest, fields = meta_digest(name, description, meta)
    # Keys in the reference's order.
    code = "ISCC:" + encode_component(MT.META, ST.NONE, VS.V0, bits, digest)
    return cast(MetaCode, {"iscc": code, **fields})


def meta_digest(
    name: str | None,
    description: str | None = None,
    meta: dict[str, Any] | str | None = None,
) -> tuple[bytes, dict[str, str]]:
    """The 256-bit digest of :func:`gen_meta_code_v0` (before it is cut to ``bits`` and encoded),
    and its result without ``iscc``: ``name``, ``description`` and ``meta`` when present, and
    ``metahash``, in that order.

    For a caller that keeps the digest of the unit, so that it need not decode the code.

    Raises:
        IsccError: As :func:`gen_meta_code_v0`, but for ``bits``.
        TypeError: As :func:`gen_meta_code_v0`, but for ``bits``.
    """
    name = meta_name("" if name is None else name)
    if not name:
        raise IsccError("the Meta-Code needs a name that is not empty after cleaning")
    if description is None or description == "":
        description = ""  # most files have none: nothing to clean
    else:
        description = text_trim(text_clean(description), META_TRIM_DESCRIPTION)
    if meta is not None and not isinstance(meta, dict | str):
        raise TypeError(f"meta must be a dict or a data-URL str, got {type(meta).__name__}")

    meta_url = None
    if meta:
        if isinstance(meta, str):
            payload = decode_data_url(meta)
            meta_url = meta
        else:
            payload = canonicalize(meta)
            media_type = "application/ld+json" if "@context" in meta else "application/json"
            meta_url = encode_data_url(media_type, payload)
        if len(payload) > META_TRIM_META:
            raise IsccError(
                f"metadata is {len(payload)} bytes, more than the {META_TRIM_META} allowed"
            )
        digest = soft_hash_meta_v0(name, payload)
        metahash = _multihash(payload)
    else:
        digest = soft_hash_meta_v0(name, description)
        metahash = _multihash(f"{name} {description}".strip().encode("utf-8"))

    fields = {"name": name}
    if description:
        fields["description"] = description
    if meta_url is not None:
        fields["meta"] = meta_url
    fields["metahash"] = metahash
    return digest, fields


def gen_meta_code(
    name: str | None,
    description: str | None = None,
    meta: dict[str, Any] | str | None = None,
    bits: int = 64,
) -> MetaCode:
    """Meta-Code with the latest algorithm (v0); see :func:`gen_meta_code_v0`."""
    return gen_meta_code_v0(name, description, meta, bits)
