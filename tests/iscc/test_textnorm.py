"""Text normalization equals iscc-core 1.5.0 on random and adversarial Unicode."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.textnorm import (
    sliding_window,
    text_clean,
    text_collapse,
    text_remove_newlines,
    text_trim,
)

ic = pytest.importorskip("iscc_core")

#: Characters the normalizers treat specially: every line break kind, TAB and other controls,
#: combining marks, RTL text and marks, CJK, emoji with ZWJ and variation selectors, compatibility
#: forms (ligatures, full-width, superscripts), the dotted capital I and final sigma, punctuation,
#: no-break and other Unicode spaces, a BOM, unassigned and private-use code points.
SPECIAL = (
    "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r\n\t\x00\x07\x7f\x9f"
    "\u0301\u0308\u0327\u20dd\u05d0\u05b8\u0627\u064e\u200f\u202e"
    "\u4e2d\u6587\u3042\uac00\U0001f600\U0001f469\u200d\U0001f4bb\ufe0f"
    "\ufb01\uff21\u00b2\u2167\u0130\u03a3\u00df\u1e9e"
    "!?.,;:-\u2014\u00bf\u3002 \u00a0\u2003\u3000\ufeff\u0378\ue000"
)

unicode_text = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(SPECIAL) | st.characters(), max_size=200),
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=200),
)

#: Text with lone surrogates (category Cs): only the functions that never encode can take them.
surrogate_text = st.text(
    alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.sampled_from(SPECIAL)
)


#: Text of 1,024 characters or more, which the normalizers filter through a lookup table.
long_text = st.lists((unicode_text | surrogate_text).filter(bool), min_size=1, max_size=8).map(
    lambda parts: "".join(parts) * (1024 // max(len("".join(parts)), 1) + 1)
)


@given(long_text)
def test_long_text_matches_reference(text: str) -> None:
    assert len(text) >= 1024
    assert text_clean(text) == ic.text_clean(text)
    assert text_collapse(text) == ic.text_collapse(text)


@given(unicode_text)
@example("")
@example(" a\u00a0b \r\n\r\n\r\n c\t\x00d \n")
@example("\n \n\u2028\t\n x \r\r\n\x85y")
def test_text_clean_matches_reference(text: str) -> None:
    assert text_clean(text) == ic.text_clean(text)


@given(surrogate_text)
def test_text_clean_removes_lone_surrogates_like_reference(text: str) -> None:
    assert text_clean(text) == ic.text_clean(text)


@given(unicode_text)
@example("")
@example("Straße İstanbul ΟΔΟΣ")
def test_text_collapse_matches_reference(text: str) -> None:
    assert text_collapse(text) == ic.text_collapse(text)


@given(surrogate_text)
def test_text_collapse_removes_lone_surrogates_like_reference(text: str) -> None:
    assert text_collapse(text) == ic.text_collapse(text)


#: Every ASCII character, which ASCII text is filtered by without asking per character.
ASCII = "".join(map(chr, range(128)))


@given(st.text(alphabet=st.sampled_from(ASCII), max_size=300))
@example(ASCII)
@example(ASCII * 20)
@example("\x00 a\tb\r\n\r\n\x0b\x0c \x1f\x7f c.d,e-f \n")
def test_ascii_text_matches_reference(text: str) -> None:
    assert text_clean(text) == ic.text_clean(text)
    assert text_collapse(text) == ic.text_collapse(text)


#: The printable ASCII characters: one line without controls, which text_clean only strips.
PRINTABLE_ASCII = "".join(map(chr, range(0x20, 0x7F)))


@given(st.text(alphabet=st.sampled_from(PRINTABLE_ASCII), max_size=300))
@example("   ")
@example("  t105  ")
@example(PRINTABLE_ASCII)
def test_printable_ascii_text_matches_reference(text: str) -> None:
    assert text_clean(text) == ic.text_clean(text)
    assert text_clean(text + "\t") == ic.text_clean(text + "\t")
    assert text_clean(text + "\n \n") == ic.text_clean(text + "\n \n")


@given(st.text(alphabet=st.sampled_from(ASCII), max_size=300))
@example(" \t\r\n\x0b\x0c\x1c\x00 ")
@example("A,\r\n\r\n  b.\x1e C ")
def test_collapsing_ascii_needs_no_cleaning_first(text: str) -> None:
    # What the Text-Code of ASCII text relies on (isccd.hashing.content).
    assert text_collapse(text_clean(text)) == text_collapse(text)
    assert text_collapse(ic.text_clean(text)) == ic.text_collapse(text)


@given(unicode_text | surrogate_text)
def test_text_remove_newlines_matches_reference(text: str) -> None:
    assert text_remove_newlines(text) == ic.text_remove_newlines(text)


@given(unicode_text, st.integers(min_value=0, max_value=300))
@example("ab€", 4)
@example("  a  ", 1)
@example("a\ud800", 1)
def test_text_trim_matches_reference(text: str, nbytes: int) -> None:
    try:
        expected = ic.text_trim(text, nbytes)
    except UnicodeEncodeError:  # lone surrogates cannot be UTF-8 encoded, here neither
        with pytest.raises(UnicodeEncodeError):
            text_trim(text, nbytes)
        return
    assert text_trim(text, nbytes) == expected


@given(
    st.one_of(unicode_text, st.binary(max_size=40), st.lists(st.integers(), max_size=40)),
    st.integers(min_value=2, max_value=20),
)
def test_sliding_window_matches_reference(seq: str | bytes | list[int], width: int) -> None:
    assert list(sliding_window(seq, width)) == list(ic.sliding_window(seq, width))


def test_sliding_window_short_input_gives_one_window() -> None:
    assert list(sliding_window("", 13)) == [""]
    assert list(sliding_window(b"ab", 3)) == [b"ab"]
    assert list(sliding_window("abcd", 3)) == ["abc", "bcd"]


@pytest.mark.parametrize("width", [1, 0, -3])
def test_sliding_window_rejects_narrow_width(width: int) -> None:
    with pytest.raises(IsccError, match="width"):
        sliding_window("abc", width)


@pytest.mark.parametrize("func", [text_clean, text_collapse, text_remove_newlines])
def test_bytes_input_raises_type_error(func: Callable[[object], str]) -> None:
    with pytest.raises(TypeError, match="must be str"):
        func(b"abc")


def test_text_trim_of_bytes_raises_type_error() -> None:
    with pytest.raises(TypeError, match="must be str"):
        text_trim(b"abc", 2)  # type: ignore[arg-type]
