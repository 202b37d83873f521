"""The one-pass Data + Instance ISCC-CODE equals iscc-lib's gen_sum_code_v0 and iscc-core's
composition of the two units."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.sum import SumHasher, gen_sum_code_v0
from tests.iscc._data import PUSH_SIZES, byte_inputs, make_data, split

ic = pytest.importorskip("iscc_core")

SUM_BITS = st.sampled_from(range(64, 257, 32))


def reference(data: bytes, bits: int, wide: bool) -> dict[str, object]:
    units = [
        ic.gen_data_code_v0(io.BytesIO(data), bits)["iscc"],
        ic.gen_instance_code_v0(io.BytesIO(data), bits),
    ]
    return {
        "iscc": ic.gen_iscc_code_v0([units[0], units[1]["iscc"]], wide=wide)["iscc"],
        "datahash": units[1]["datahash"],
        "filesize": units[1]["filesize"],
        "units": [units[0], units[1]["iscc"]],
    }


@given(byte_inputs(), SUM_BITS, st.booleans())
def test_matches_iscc_core_composition(data: bytes, bits: int, wide: bool) -> None:
    assert gen_sum_code_v0(io.BytesIO(data), bits, wide, add_units=True) == reference(
        data, bits, wide
    )


@pytest.mark.slow
@given(byte_inputs(), st.lists(PUSH_SIZES, min_size=1, max_size=6))
def test_hasher_with_any_split(data: bytes, sizes: list[int]) -> None:
    hasher = SumHasher()
    for piece in split(data, sizes):
        hasher.push(piece)
    expected = reference(data, 128, wide=True)
    assert hasher.result(128, wide=True, add_units=True) == expected
    assert hasher.filesize == len(data)


@pytest.mark.parametrize(("bits", "wide"), [(64, False), (128, True), (64, True), (256, False)])
@pytest.mark.parametrize("add_units", [False, True])
def test_matches_iscc_lib(tmp_path: Path, bits: int, wide: bool, add_units: bool) -> None:
    il = pytest.importorskip("iscc_lib")
    data = make_data("mixed", 300_000, seed=bits)
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    expected = dict(il.gen_sum_code_v0(str(path), bits=bits, wide=wide, add_units=add_units))
    with path.open("rb") as stream:
        assert gen_sum_code_v0(stream, bits, wide, add_units) == expected
    assert gen_sum_code_v0(data, bits, wide, add_units) == expected


@pytest.mark.parametrize("bits", [32, 48, 288])
def test_bit_lengths_too_short_for_an_iscc_code_raise(bits: int) -> None:
    with pytest.raises(IsccError):
        gen_sum_code_v0(b"abc", bits)


def test_wide_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="wide"):
        gen_sum_code_v0(b"abc", 128, wide="yes")  # type: ignore[arg-type]
