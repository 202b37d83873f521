"""Text-Code (ISO 24138, MainType CONTENT, SubType TEXT): a similarity hash of plain text.

The text is collapsed (:func:`~isccd.iscc.textnorm.text_collapse`: lower case, no whitespace,
punctuation, marks or controls), every 13-character window is hashed with xxh32 (of its UTF-8
bytes), and the 64-permutation MinHash of those hashes is the 256-bit digest.

The windows are never materialized as strings: the collapsed text is encoded to UTF-8 once, the
byte offset of every character is found with numpy, and a compiled kernel hashes each window's
byte span and folds it into the MinHash (:mod:`isccd.iscc.kernels`).

Pure: no I/O. The caller strips markup and extracts the text.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from isccd.iscc._bits import require_unit_bits
from isccd.iscc.codec import encode_component
from isccd.iscc.constants import MT, ST_CC, VS
from isccd.iscc.kernels import SMALL_TEXT, kernels_for
from isccd.iscc.textnorm import text_collapse

__all__ = ["TEXT_NGRAM_SIZE", "TextCode", "gen_text_code", "gen_text_code_v0", "soft_hash_text_v0"]

#: Width of the hashed character windows. Conformance critical.
TEXT_NGRAM_SIZE = 13


class TextCode(TypedDict):
    """The result of :func:`gen_text_code_v0`."""

    iscc: str
    characters: int


def soft_hash_text_v0(text: str) -> bytes:
    """The 256-bit MinHash digest of the 13-character windows of already collapsed text.

    Args:
        text: Text as returned by :func:`~isccd.iscc.textnorm.text_collapse`. Text shorter than
            13 characters is one window, also when empty.

    Returns:
        32 bytes.

    Raises:
        TypeError: If ``text`` is not a ``str``.
        UnicodeEncodeError: If ``text`` holds lone surrogates (collapsed text never does).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    utf8 = text.encode("utf-8")
    offsets = None  # ASCII: a byte per character
    if not text.isascii():
        # A character starts at every byte that is not a UTF-8 continuation byte (0b10xxxxxx).
        array = np.frombuffer(utf8, dtype=np.uint8)
        starts = np.flatnonzero((array & 0xC0) != 0x80)
        offsets = np.empty(starts.size + 1, dtype=np.int64)
        offsets[:-1] = starts
        offsets[-1] = array.size
    return kernels_for(len(utf8), SMALL_TEXT).text_digest(utf8, offsets, TEXT_NGRAM_SIZE)


def gen_text_code_v0(text: str, bits: int = 64) -> TextCode:
    """Create a Text-Code (algorithm version 0).

    Args:
        text: Plain text (markup already removed). Any ``str``, lone surrogates included.
        bits: Body length, a multiple of 32 from 32 to 256.

    Returns:
        ``{"iscc": "ISCC:E...", "characters": n}`` where ``n`` counts the characters after
        collapsing.

    Raises:
        IsccError: If ``bits`` is not a legal length.
        TypeError: If ``text`` is not a ``str`` or ``bits`` not an int.
    """
    bits = require_unit_bits(bits)
    collapsed = text_collapse(text)
    digest = soft_hash_text_v0(collapsed)
    return {
        "iscc": "ISCC:" + encode_component(MT.CONTENT, ST_CC.TEXT, VS.V0, bits, digest),
        "characters": len(collapsed),
    }


def gen_text_code(text: str, bits: int = 64) -> TextCode:
    """Create a Text-Code with the latest algorithm (:func:`gen_text_code_v0`)."""
    return gen_text_code_v0(text, bits)
