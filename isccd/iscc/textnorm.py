"""Text normalization for ISCC similarity hashing and display (ISO 24138, iscc-core 1.5.0).

- :func:`text_clean` prepares text for display (Meta-Code name and description).
- :func:`text_remove_newlines` turns text into one line with single spaces.
- :func:`text_trim` cuts text to a UTF-8 byte budget without splitting a character.
- :func:`text_collapse` is the similarity pre-processing of the Text-Code and Meta-Code.
- :func:`sliding_window` yields the overlapping n-grams those codes hash.

The results equal iscc-core 1.5.0's for every input, including lone surrogates and every kind of
line break. Category filtering is decided once per *distinct* character and applied with
``str.translate``, which keeps large documents fast (the per-character decision loop of the
reference dominates Text-Code time on megabytes of text); for ASCII text it is decided once per
process, and the text filtered as bytes.

Pure functions: no I/O. Results depend on the Unicode database of the running Python, exactly as
the reference's do.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np

from isccd.iscc.exceptions import IsccError

__all__ = [
    "TEXT_NEWLINES",
    "TEXT_UNICODE_FILTER",
    "sliding_window",
    "text_clean",
    "text_collapse",
    "text_remove_newlines",
    "text_trim",
]

#: Line-break characters that :func:`text_clean` keeps although their category is ``C``.
TEXT_NEWLINES: frozenset[str] = frozenset(
    ("\u000a", "\u000b", "\u000c", "\u000d", "\u0085", "\u2028", "\u2029")
)

#: First letters of the Unicode general categories :func:`text_collapse` removes
#: (control/format/surrogate/unassigned, marks, punctuation). Conformance critical.
TEXT_UNICODE_FILTER: frozenset[str] = frozenset(("C", "M", "P"))

#: From this length on, characters are removed through a numpy lookup table rather than
#: ``str.translate`` (equal at about a thousand characters).
_LUT_MIN_CHARS = 1024

_Seq = TypeVar("_Seq", bound=Sequence[object])


def _require_str(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be str, not {type(text).__name__}")
    return text


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "C" and ch not in TEXT_NEWLINES


def _is_collapsed_away(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch)[0] in TEXT_UNICODE_FILTER


def _ascii_deletions(remove: Callable[[str], bool]) -> bytes:
    """The ASCII characters for which ``remove`` is true, as ``bytes.translate`` deletes them."""
    return bytes(code for code in range(128) if remove(chr(code)))


#: What each predicate removes from ASCII text, decided once: most text is ASCII, and deleting
#: bytes is several times faster than finding the distinct characters of the text.
_ASCII_CONTROL = _ascii_deletions(_is_control)
_ASCII_COLLAPSED_AWAY = _ascii_deletions(_is_collapsed_away)
#: ``str.lower`` of the ASCII characters, as a ``bytes.translate`` table.
_ASCII_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())


def _remove_chars(text: str, remove: Callable[[str], bool], ascii_deletions: bytes) -> str:
    """``text`` without the characters for which ``remove`` is true (asked once per character).

    ``ascii_deletions`` are the ASCII characters ``remove`` is true for (see
    :func:`_ascii_deletions`): ASCII text is filtered with them alone.
    """
    if text.isascii():
        return text.encode("ascii").translate(None, ascii_deletions).decode("ascii")
    if len(text) < _LUT_MIN_CHARS:
        table = {ord(ch): None for ch in set(text) if remove(ch)}
        return text.translate(table) if table else text
    # Code points as uint32; "surrogatepass" carries lone surrogates through (both predicates
    # remove them, category Cs).
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lookup = np.zeros(int(codes.max()) + 1, dtype=np.bool_)
    lookup[codes] = True
    present = np.flatnonzero(lookup).tolist()
    lookup[:] = False
    removed = [cp for cp in present if remove(chr(cp))]
    if not removed:
        return text
    lookup[removed] = True
    return codes[~lookup[codes]].tobytes().decode("utf-32-le", "surrogatepass")


def text_clean(text: str) -> str:
    """Clean text for display, as the Meta-Code does with names and descriptions.

    NFKC-normalizes, removes every control/format/unassigned/surrogate character (category
    ``C*``, including TAB) except the line breaks of :data:`TEXT_NEWLINES`, turns whitespace-only
    lines into empty lines keeping at most one empty line in a row, joins the lines with ``\\n``
    and strips outer whitespace.

    Args:
        text: Any text.

    Returns:
        The cleaned text.

    Raises:
        TypeError: If ``text`` is not a ``str``.
    """
    if _require_str(text).isascii():
        # NFKC leaves ASCII as it is; its controls go as bytes, and text on one line (no break
        # is left) keeps its one line: only the outer whitespace goes.
        kept = text.encode("ascii").translate(None, _ASCII_CONTROL)
        if not (10 in kept or 13 in kept or 11 in kept or 12 in kept):  # \n, \r, \v, \f
            return kept.decode("ascii").strip()
        text = kept.decode("ascii")
    else:
        text = _remove_chars(unicodedata.normalize("NFKC", text), _is_control, _ASCII_CONTROL)
    lines: list[str] = []
    empty_run = 0
    for line in text.splitlines():
        if line.strip():
            lines.append(line)
            empty_run = 0
        elif empty_run < 1:
            lines.append("")
            empty_run += 1
    return "\n".join(lines).strip()


def text_remove_newlines(text: str) -> str:
    """Join the words of ``text`` with single spaces (every whitespace run becomes one space).

    Args:
        text: Any text.

    Returns:
        One line of text without leading or trailing whitespace.

    Raises:
        TypeError: If ``text`` is not a ``str``.
    """
    return " ".join(_require_str(text).split())


def text_trim(text: str, nbytes: int) -> str:
    """Trim ``text`` so that its UTF-8 encoding is at most ``nbytes`` long, then strip it.

    A character that the byte limit would split is dropped whole, so the result may be shorter
    than the limit.

    Args:
        text: Any text that can be encoded as UTF-8.
        nbytes: The byte budget (>= 0).

    Returns:
        The trimmed, stripped text.

    Raises:
        TypeError: If ``text`` is not a ``str``.
        UnicodeEncodeError: If ``text`` holds lone surrogates (as in the reference; run
            :func:`text_clean` first, which removes them).
    """
    encoded = _require_str(text).encode("utf-8")[:nbytes]
    return encoded.decode("utf-8", "ignore").strip()


def text_collapse(text: str) -> str:
    """Normalize and simplify text for similarity hashing (Text-Code and Meta-Code).

    NFD-decomposes, lower-cases (``str.lower``, not ``casefold``), removes whitespace and every
    character whose general category is control/format/surrogate/unassigned (``C*``), mark
    (``M*``) or punctuation (``P*``), then NFKC-recomposes.

    Args:
        text: Any text, lone surrogates included (they are removed).

    Returns:
        The collapsed text.

    Raises:
        TypeError: If ``text`` is not a ``str``.
    """
    if _require_str(text).isascii():
        # NFD and NFKC leave ASCII as it is and its lower case is a byte mapping: one translate
        # does it all (2.1 -> 1.4 µs for 2 KB).
        return text.encode("ascii").translate(_ASCII_LOWER, _ASCII_COLLAPSED_AWAY).decode("ascii")
    text = unicodedata.normalize("NFD", text).lower()
    return unicodedata.normalize(
        "NFKC", _remove_chars(text, _is_collapsed_away, _ASCII_COLLAPSED_AWAY)
    )


def sliding_window(seq: _Seq, width: int) -> Iterator[_Seq]:
    """Yield the overlapping slices ``seq[i:i+width]``, advancing one item at a time.

    A sequence shorter than ``width`` (also an empty one) yields exactly one slice: the whole
    sequence. Works on ``str`` (code points), ``bytes`` and any sliceable sequence.

    Args:
        seq: The sequence to slide over.
        width: Window width, at least 2.

    Returns:
        An iterator of slices of the same type as ``seq``.

    Raises:
        IsccError: If ``width`` is below 2 (the reference raises ``AssertionError``).
    """
    if width < 2:
        raise IsccError(f"sliding window width must be 2 or more, got {width}")
    # Slicing a str, bytes, list or tuple returns the same type; typeshed's Sequence says only
    # "Sequence", hence the ignore.
    return (seq[i : i + width] for i in range(max(len(seq) - width + 1, 1)))  # type: ignore[misc]
