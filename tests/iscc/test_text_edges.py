"""Text-Code, Meta-Code and ISCC-CODE against iscc-core 1.5.0 on the edges of their fast paths."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.iscc.iscc_code import gen_iscc_code_v0
from isccd.iscc.meta import gen_meta_code_v0
from isccd.iscc.text import gen_text_code_v0, soft_hash_text_v0

ic = pytest.importorskip("iscc_core")

BITS = st.sampled_from(range(32, 257, 32))
ASCII_ALL = st.characters(min_codepoint=0, max_codepoint=127)
MIXED = ASCII_ALL | st.sampled_from("éßİı\u0301\u00a0\u2028ﬁ€😀\u3000\uff21")
#: Lengths around the window width and the ASCII offsets cache and text_fold's block.
LENGTHS = st.sampled_from([0, 1, 11, 12, 13, 14, 15, 25, 26, 4095, 4096, 4097, 4098, 4108, 4109])


@st.composite
def sized(draw: st.DrawFn, alphabet: st.SearchStrategy[str]) -> str:
    n = draw(LENGTHS)
    base = draw(st.text(alphabet=alphabet, min_size=min(n, 20), max_size=min(n, 20)))
    if n <= 20:
        return base
    filler = draw(st.sampled_from(["a", "Ab1 ", "x\t\n", "\x00\x7f"]))
    body = (filler * n)[: n - len(base)]
    pos = draw(st.integers(0, len(body)))
    return body[:pos] + base + body[pos:]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sized(ASCII_ALL) | sized(MIXED), BITS)
def test_text_code_on_edges(text: str, bits: int) -> None:
    assert gen_text_code_v0(text, bits) == ic.gen_text_code_v0(text, bits)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(sized(ASCII_ALL) | sized(MIXED))
def test_soft_hash_on_edges(text: str) -> None:
    assert soft_hash_text_v0(text) == ic.soft_hash_text_v0(text)


NAME = st.text(alphabet=MIXED, min_size=1, max_size=140)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(NAME, st.none() | st.just("") | st.text(alphabet=MIXED, min_size=0, max_size=4200), BITS)
def test_meta_code_on_edges(name: str, description: str | None, bits: int) -> None:
    try:
        expected = ic.gen_meta_code_v0(name, description, None, bits)
    except Exception as exc:
        with pytest.raises(type(exc)):
            gen_meta_code_v0(name, description, None, bits)
        return
    assert dict(gen_meta_code_v0(name, description, None, bits)) == dict(expected)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_iscc_code_layouts(data: st.DataObject) -> None:
    bits = data.draw(st.sampled_from([64, 128, 256]))
    kinds = data.draw(st.sampled_from(["sum", "text", "image", "meta+text", "meta"]))
    codes = []
    if "meta" in kinds:
        codes.append(ic.gen_meta_code_v0("name", bits=bits)["iscc"])
    if "text" in kinds:
        codes.append(ic.gen_text_code_v0("some text here", bits=bits)["iscc"])
    if "image" in kinds:
        codes.append(ic.gen_image_code_v0([0] * 1024, bits=bits)["iscc"])
    payload = os.urandom(data.draw(st.integers(0, 100)))
    codes.append(ic.gen_data_code_v0(io.BytesIO(payload), bits=bits)["iscc"])
    codes.append(ic.gen_instance_code_v0(io.BytesIO(payload), bits=bits)["iscc"])
    wide = data.draw(st.booleans())
    for _ in range(2):  # twice: the second from the cached layout
        assert gen_iscc_code_v0(codes, wide=wide) == ic.gen_iscc_code_v0(codes, wide=wide)
