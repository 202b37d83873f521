"""Mixed-Code against iscc-core 1.5.0 and iscc-lib at every bit length, and its input checks."""

from __future__ import annotations

import iscc_core
import iscc_lib
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.mixed import gen_mixed_code, gen_mixed_code_v0, soft_hash_codes_v0

ALL_BITS = range(32, 257, 32)


@st.composite
def content_code(draw: st.DrawFn, min_bits: int = 32, mtype: int = iscc_core.MT.CONTENT) -> str:
    """A unit made by the reference's encoder: random SubType (MIXED included), random body."""
    bits = draw(st.sampled_from([b for b in ALL_BITS if b >= min_bits]))
    body = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
    subtype = draw(st.sampled_from(list(iscc_core.ST_CC)))
    unit = str(iscc_core.encode_component(mtype, subtype, iscc_core.VS.V0, bits, body))
    return draw(st.sampled_from([unit, "ISCC:" + unit, unit.lower()]))


@st.composite
def mixed_inputs(draw: st.DrawFn, bits: int) -> list[str]:
    codes = st.lists(content_code(min_bits=bits), min_size=2, max_size=8)
    # A few codes repeated make SimHash ties likely.
    return draw(codes | codes.flatmap(lambda cs: st.lists(st.sampled_from(cs), min_size=2)))


@pytest.mark.slow
@pytest.mark.parametrize("bits", ALL_BITS)
@given(data=st.data())
def test_equals_reference(data: st.DataObject, bits: int) -> None:
    codes = data.draw(mixed_inputs(bits))
    expected = iscc_core.gen_mixed_code_v0(codes, bits)
    assert gen_mixed_code_v0(codes, bits) == expected
    assert gen_mixed_code(codes, bits) == expected
    assert dict(iscc_lib.gen_mixed_code_v0(codes, bits)) == expected


@pytest.mark.slow
@given(st.data(), st.sampled_from(ALL_BITS))
def test_soft_hash_equals_reference(data: st.DataObject, bits: int) -> None:
    codes = data.draw(mixed_inputs(bits))
    raw = [iscc_core.decode_base32(iscc_core.iscc_clean(c).upper()) for c in codes]
    assert soft_hash_codes_v0(raw, bits) == iscc_core.soft_hash_codes_v0(raw, bits)


def test_parts_are_the_input_codes_unchanged() -> None:
    codes = ("ISCC:EAASKDNZNYGUUF5A", "eeaqaaaaaaaaaaaa")
    assert gen_mixed_code_v0(codes)["parts"] == list(codes)


@given(content_code())
def test_fewer_than_two_codes_are_refused(code: str) -> None:
    with pytest.raises(IsccError, match="at least 2"):
        gen_mixed_code_v0([code], 32)
    with pytest.raises(IsccError, match="at least 2"):
        gen_mixed_code_v0([], 32)


@pytest.mark.parametrize(
    "other",
    [
        "ISCC:AAAWKLHFXNSF7NNE",
        "ISCC:GAASL4F2WZY7KBXB",
        "ISCC:IAA26E2JXH27TING",
        "ISCC:CAAQAAAAAAAAAAAA",
    ],
)
def test_non_content_codes_are_refused(other: str) -> None:
    with pytest.raises(IsccError, match="Content-Codes only"):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A", other])


def test_codes_shorter_than_bits_are_refused() -> None:
    with pytest.raises(IsccError, match="too short"):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A", "ISCC:EEA4GQZQTY6J5DTH"], 128)


def test_truncated_codes_are_refused() -> None:
    # A 256-bit header with a 64-bit body.
    truncated = iscc_core.encode_base32(iscc_core.encode_header(2, 0, 0, 7) + bytes(8))
    with pytest.raises(IsccError, match="truncated"):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A", truncated])


@pytest.mark.parametrize("code", ["ISCC:EAAS!!", "URN:EAASKDNZNYGUUF5A", ""])
def test_undecodable_codes_are_refused(code: str) -> None:
    with pytest.raises(IsccError):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A", code])


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="not one str"):
        gen_mixed_code_v0("ISCC:EAASKDNZNYGUUF5A")
    with pytest.raises(TypeError):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A", b"EAASKDNZNYGUUF5A"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="bits"):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A"] * 2, "64")  # type: ignore[arg-type]


@pytest.mark.parametrize("bits", [0, 16, 48, 288])
def test_bad_bits_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_mixed_code_v0(["ISCC:EAASKDNZNYGUUF5A"] * 2, bits)
