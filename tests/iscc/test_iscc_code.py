"""ISCC-CODE against iscc-core 1.5.0 and iscc-lib, and its input checks."""

from __future__ import annotations

import iscc_core
import iscc_lib
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.iscc_code import gen_iscc_code, gen_iscc_code_v0

MT = iscc_core.MT
ALL_BITS = range(32, 257, 32)
UNIT_BITS = [b for b in ALL_BITS if b >= 64]


@st.composite
def unit(draw: st.DrawFn, mtype: int, subtype: int = 0, bits: int | None = None) -> str:
    """A unit made by the reference's encoder, written in one of the accepted forms."""
    bits = draw(st.sampled_from(UNIT_BITS)) if bits is None else bits
    body = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
    code = str(iscc_core.encode_component(mtype, subtype, iscc_core.VS.V0, bits, body))
    return draw(st.sampled_from([code, "ISCC:" + code, "iscc:" + code.lower()]))


@st.composite
def unit_sets(draw: st.DrawFn) -> tuple[list[str], bool]:
    """Data + Instance with any optional units, in random order, sometimes wide-eligible."""
    if draw(st.booleans()):  # Data + Instance only, often long enough for WIDE
        codes = [draw(unit(MT.DATA)), draw(unit(MT.INSTANCE))]
    else:
        subtype = draw(st.sampled_from(list(iscc_core.ST_CC)))
        codes = [draw(unit(MT.DATA)), draw(unit(MT.INSTANCE))]
        if draw(st.booleans()):
            codes.append(draw(unit(MT.META)))
        if draw(st.booleans()):
            codes.append(draw(unit(MT.CONTENT, subtype)))
        if draw(st.booleans()):
            # Usually the Content-Code's SubType; sometimes another (the reference refuses).
            semantic_subtype = draw(st.sampled_from([subtype, *iscc_core.ST_CC]))
            codes.append(draw(unit(MT.SEMANTIC, semantic_subtype)))
    return draw(st.permutations(codes)), draw(st.booleans())


@settings(max_examples=settings().max_examples * 5)  # cheap, and many combinations
@given(unit_sets())
@example(
    (
        [
            "AAAYPXW445FTYNJ3",
            "EAARMJLTQCUWAND2",
            "GABVVC5DMJJGYKZ4ZBYVNYABFFYXG",
            "IADWIK7A7JTUAQ2D6QARX7OBEIK3OOUAM42LOBLCZ4ZOGDLRHMDL6TQ",
        ],
        False,
    )
)
@pytest.mark.slow
def test_equals_reference(case: tuple[list[str], bool]) -> None:
    codes, wide = case
    try:
        expected = iscc_core.gen_iscc_code_v0(codes, wide)
    except ValueError:
        with pytest.raises(IsccError, match="same SubType"):
            gen_iscc_code_v0(codes, wide)
        return
    assert gen_iscc_code_v0(codes, wide) == expected
    assert dict(iscc_lib.gen_iscc_code_v0(codes, wide)) == expected
    if not wide:
        assert gen_iscc_code(codes) == expected


def test_wide_needs_exactly_data_and_instance_of_128_bits() -> None:
    data = "ISCC:GADWAIBQLNWP7X32J3INMAMDUJ4QMN67BBQKVTVZIWHXQ7QJIKHYTBY"
    instance = "ISCC:IADZ3NGA3HTIYUQD3SGC737FF6S5KRTRXY5DEU7ANCEMVTT4MDS2OQY"
    # Spec examples (demo.bmp): WIDE from 256-bit units, a SUM code from 64-bit units.
    wide = gen_iscc_code_v0([data, instance], wide=True)["iscc"]
    assert wide == "ISCC:K4AGAIBQLNWP7X32J3INMAMDUJ4QNHNUYDM6NDCSAPOIYL7P4UX2LVI"
    short = gen_iscc_code_v0(["ISCC:GAAWAIBQLNWP7X32", instance], wide=True)["iscc"]
    assert short == "ISCC:KUAGAIBQLNWP7X32TW2MBWPGRRJAG"
    assert gen_iscc_code_v0([data, instance])["iscc"] == short


def test_fewer_than_two_units_are_refused() -> None:
    with pytest.raises(IsccError, match="at least two"):
        gen_iscc_code_v0(["ISCC:GAASL4F2WZY7KBXB"])
    with pytest.raises(IsccError, match="at least two"):
        gen_iscc_code_v0([])


@pytest.mark.parametrize(
    "codes",
    [
        ["ISCC:AAAWKLHFXNSF7NNE", "ISCC:IAA26E2JXH27TING"],  # no Data-Code
        ["ISCC:GAASL4F2WZY7KBXB", "ISCC:EAASKDNZNYGUUF5A"],  # no Instance-Code
    ],
)
def test_missing_data_or_instance_is_refused(codes: list[str]) -> None:
    with pytest.raises(IsccError, match="Data-Code and an Instance-Code"):
        gen_iscc_code_v0(codes)


def test_duplicate_maintypes_are_refused() -> None:
    codes = ["EAASKDNZNYGUUF5A", "EEA4GQZQTY6J5DTH", "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"]
    with pytest.raises(IsccError, match="each MainType once"):
        gen_iscc_code_v0(codes)
    with pytest.raises(IsccError, match="each MainType once"):
        gen_iscc_code_v0(["GAASL4F2WZY7KBXB", "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"])


def test_conflicting_content_subtypes_are_refused() -> None:
    semantic_image = iscc_core.encode_component(MT.SEMANTIC, 1, 0, 64, bytes(8))
    codes = ["EAASKDNZNYGUUF5A", semantic_image, "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"]
    with pytest.raises(IsccError, match="same SubType"):
        gen_iscc_code_v0(codes)


def test_units_shorter_than_64_bits_are_refused() -> None:
    short_data = iscc_core.encode_component(MT.DATA, 0, 0, 32, bytes(4))
    with pytest.raises(IsccError, match="shorter than 64 bits"):
        gen_iscc_code_v0([short_data, "IAA26E2JXH27TING"])


@pytest.mark.parametrize(
    "code",
    [
        "ISCC:KUAGAIBQLNWP7X32TW2MBWPGRRJAG",  # an ISCC-CODE is not a unit
        "ISCC:MAIGC5KN3I6TCUBK",  # an ISCC-ID
        "ISCC:OAAQAAAAAAAAAAAA",  # a Flake-Code
    ],
)
def test_non_units_are_refused(code: str) -> None:
    with pytest.raises(IsccError, match="not an ISCC-UNIT"):
        gen_iscc_code_v0([code, "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"])


def test_malformed_units_are_refused() -> None:
    truncated = iscc_core.encode_base32(iscc_core.encode_header(MT.DATA, 0, 0, 3) + bytes(8))
    with pytest.raises(IsccError, match="declares 128 bits"):
        gen_iscc_code_v0([truncated, "IAA26E2JXH27TING"])
    bad_subtype = iscc_core.encode_base32(iscc_core.encode_header(MT.CONTENT, 5, 0, 1) + bytes(8))
    with pytest.raises(IsccError, match="invalid SubType"):
        gen_iscc_code_v0([bad_subtype, "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"])
    with pytest.raises(IsccError):
        gen_iscc_code_v0(["ISCC:GAAS!!!!", "IAA26E2JXH27TING"])


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="not one str"):
        gen_iscc_code_v0("GAASL4F2WZY7KBXBIAA26E2JXH27TING")
    with pytest.raises(TypeError):
        gen_iscc_code_v0([b"GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="wide"):
        gen_iscc_code_v0(["GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"], wide=1)  # type: ignore[arg-type]


def test_an_invalid_combination_is_refused_each_time() -> None:
    semantic_image = iscc_core.encode_component(MT.SEMANTIC, 1, 0, 64, bytes(8))
    codes = ["EAASKDNZNYGUUF5A", semantic_image, "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"]
    for _ in range(2):  # a refusal is not remembered as a layout
        with pytest.raises(IsccError, match="same SubType"):
            gen_iscc_code_v0(codes)
    valid = ["EAASKDNZNYGUUF5A", "GAASL4F2WZY7KBXB", "IAA26E2JXH27TING"]
    assert gen_iscc_code_v0(valid) == iscc_core.gen_iscc_code_v0(valid)
