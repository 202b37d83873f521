"""ISCC-SEQ (IEP-0020) against iscc-core 1.5.0."""

from __future__ import annotations

import iscc_core as ic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.seq import decode_seq, encode_seq, read_unit
from tests.iscc.code_strategies import SUBTYPES, UNIT_BITS, UNIT_TYPES


@st.composite
def seq_units(draw: st.DrawFn) -> str:
    """A unit for an ISCC-SEQ: any SEQ MainType and length, SubType and Version sometimes
    unknown (multi-nibble), spelled canonically, bare, lower case or hyphenated."""
    mt = draw(st.sampled_from(UNIT_TYPES))
    stype = draw(st.one_of(st.sampled_from(SUBTYPES[mt]), st.integers(0, 600)))
    vs = draw(st.one_of(st.just(0), st.integers(0, 600)))
    bits = draw(st.sampled_from(UNIT_BITS))
    digest = draw(st.binary(min_size=bits // 8, max_size=bits // 8))
    code = ic.encode_base32(ic.encode_header(mt, stype, vs, bits // 32 - 1) + digest)
    form = draw(st.sampled_from(["ISCC:{}", "{}", "iscc:{}", "lower"]))
    return code.lower() if form == "lower" else form.format(code)


@pytest.mark.slow
@given(st.lists(seq_units(), min_size=1, max_size=6))
def test_encode_and_decode_equal_the_reference(units: list[str]) -> None:
    seq = encode_seq(units)
    assert seq == ic.encode_seq(units)
    decoded = decode_seq(seq)
    assert decoded == ic.decode_seq(seq)
    assert encode_seq(decoded) == seq
    assert [u.removeprefix("ISCC:") for u in decoded] == [ic.iscc_clean(u.upper()) for u in units]


@given(st.binary(max_size=80))
def test_decode_seq_of_any_bytes_behaves_as_the_reference(data: bytes) -> None:
    try:
        expected = ic.decode_seq(data)
    except ValueError:
        with pytest.raises(IsccError):
            decode_seq(data)
    else:
        assert decode_seq(data) == expected


def test_read_unit_offsets() -> None:
    seq = encode_seq(["ISCC:EAASKDNZNYGUUF5A", "ISCC:GAAW2PRCRS5LNVZV"])
    assert read_unit(seq) == 10
    assert read_unit(seq, 10) == 20


@pytest.mark.parametrize(
    ("units", "message"),
    [
        ([], "at least one"),
        (["  "], "must not be empty"),
        (["ISCC:KUAG2PRCRS5LNVZVJKAFAVOJXLZZM"], "MainType ISCC"),
        (["ISCC:MAIGC5KN3I6TCUBK"], "MainType ID"),
        (["ISCC:OAAQDIQBS7RM3GIH"], "MainType FLAKE"),
        (["ISCC:EAASKDNZNYGUUF5AGAAW2PRCRS5LNVZV"], "trailing data"),
        (["ISCC:EAASKDNZNYGUUF5"], "truncated"),
    ],
)
def test_encode_seq_errors(units: list[str], message: str) -> None:
    with pytest.raises(IsccError, match=message):
        encode_seq(units)


@pytest.mark.parametrize("units", ["ISCC:EAASKDNZNYGUUF5A", b"\x20\x01", [b"\x20\x01"]])
def test_encode_seq_type_errors(units: object) -> None:
    with pytest.raises(TypeError):
        encode_seq(units)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (bytes([0x20, 0x01, 0, 0]), "truncated"),
        (bytes([0x20, 0x01]) + bytes(9), "truncated"),  # a complete unit and one trailing byte
        (bytes([0x20, 0x80, 0x1F]) + bytes(8), "non-canonical"),  # Version 8, pad nibble 0xF
        (bytes([0xFF, 0xFF]), "malformed"),
    ],
)
def test_decode_seq_errors(data: bytes, message: str) -> None:
    with pytest.raises(IsccError, match=message):
        decode_seq(data)


def test_decode_seq_type_error() -> None:
    with pytest.raises(TypeError):
        decode_seq("2001")  # type: ignore[arg-type]
