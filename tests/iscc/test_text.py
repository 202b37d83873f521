"""Text-Code equals iscc-core 1.5.0 (and iscc-lib) on random Unicode at every bit length."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.text import gen_text_code, gen_text_code_v0, soft_hash_text_v0
from tests.iscc.test_textnorm import ASCII, SPECIAL, surrogate_text, unicode_text

ic = pytest.importorskip("iscc_core")

BITS = st.sampled_from(range(32, 257, 32))

#: Long text: words from several scripts with punctuation and line breaks, long enough for
#: many windows and for the lookup-table path of text_collapse.
long_text = st.lists(
    st.text(alphabet=st.sampled_from(SPECIAL) | st.characters(), min_size=1, max_size=12),
    min_size=100,
    max_size=600,
).map(" ".join)


@given(unicode_text | surrogate_text | long_text, BITS)
@example("", 64)
@example("Hello World", 64)
@example("  !!! ... ", 256)
@pytest.mark.slow
def test_matches_reference(text: str, bits: int) -> None:
    assert gen_text_code_v0(text, bits) == ic.gen_text_code_v0(text, bits)


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=400))
def test_soft_hash_matches_reference_on_uncollapsed_text(text: str) -> None:
    assert soft_hash_text_v0(text) == ic.soft_hash_text_v0(text)


@given(st.text(alphabet=st.sampled_from(ASCII), max_size=400))
@example(ASCII * 3)
def test_soft_hash_of_ascii_text_matches_reference(text: str) -> None:
    assert soft_hash_text_v0(text) == ic.soft_hash_text_v0(text)


@pytest.mark.parametrize("chars", [1, 13, 14, 4095, 4096, 4097, 4098, 9000])
def test_soft_hash_of_ascii_text_on_either_side_of_its_cached_offsets(chars: int) -> None:
    # ASCII text up to 4,096 characters takes its character offsets from a cached array. All
    # windows but the last are alike here, so a last character left out changes the digest.
    text = "a" * (chars - 1) + "b"
    assert soft_hash_text_v0(text) == ic.soft_hash_text_v0(text)


@pytest.mark.slow
def test_matches_iscc_lib_on_a_large_multilingual_text() -> None:
    il = pytest.importorskip("iscc_lib")
    rng = random.Random(4)
    words = [
        "Straße",
        "İstanbul",
        "ΟΔΟΣ",
        "naïve",
        "café",
        "中文",
        "文本",
        "日本語",
        "Привет",
        "мир",
        "العربية",
        "the",
        "of",
        "and",
    ]
    text = "\n".join(" ".join(rng.choices(words, k=12)) + "." for _ in range(4_000))
    assert gen_text_code_v0(text, 256) == dict(il.gen_text_code_v0(text, 256))
    assert gen_text_code(text) == ic.gen_text_code_v0(text)


def test_empty_text() -> None:
    # Spec 3.2: the single empty window.
    assert gen_text_code_v0("") == {"iscc": "ISCC:EAASL4F2WZY7KBXB", "characters": 0}


@pytest.mark.parametrize("bits", [0, 16, 48, 288])
def test_illegal_bit_lengths_raise(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_text_code_v0("text", bits)


@pytest.mark.parametrize("text", [b"bytes", None, 42])
def test_non_str_raises_type_error(text: object) -> None:
    with pytest.raises(TypeError):
        gen_text_code_v0(text)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        soft_hash_text_v0(text)  # type: ignore[arg-type]
