"""Instance-Code equals iscc-core 1.5.0 for any input, bit length and split into pushes."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.instance import (
    InstanceHasher,
    InstanceHasherV0,
    gen_instance_code,
    gen_instance_code_v0,
    hash_instance_v0,
)
from tests.iscc._data import PUSH_SIZES, byte_inputs, make_data, split

ic = pytest.importorskip("iscc_core")

BITS = st.sampled_from(range(32, 257, 32))


def reference(data: bytes, bits: int = 64) -> dict[str, object]:
    return dict(ic.gen_instance_code_v0(io.BytesIO(data), bits))


@given(byte_inputs(), BITS)
def test_matches_reference(data: bytes, bits: int) -> None:
    assert gen_instance_code_v0(io.BytesIO(data), bits) == reference(data, bits)
    assert gen_instance_code_v0(data, bits) == reference(data, bits)


@pytest.mark.slow
@given(byte_inputs(), st.lists(PUSH_SIZES, min_size=1, max_size=8))
def test_any_split_gives_the_same_code(data: bytes, sizes: list[int]) -> None:
    hasher = InstanceHasherV0()
    for piece in split(data, sizes):
        hasher.push(piece)
    expected = reference(data, 256)
    assert "ISCC:" + hasher.code(256) == expected["iscc"]
    assert hasher.multihash() == expected["datahash"]
    assert hasher.filesize == len(data) == expected["filesize"]


def test_empty_input() -> None:
    # Spec 3.8: BLAKE3 of nothing.
    assert gen_instance_code_v0(b"")["iscc"] == "ISCC:IAA26E2JXH27TING"


def test_hasher_initial_data_alias_and_digest() -> None:
    data = make_data("random", 10_000, seed=1)
    hasher = InstanceHasher(data)
    assert hasher.digest() == ic.hash_instance_v0(io.BytesIO(data))
    assert hash_instance_v0(data) == hasher.digest()
    assert gen_instance_code(data, 128) == reference(data, 128)


@pytest.mark.parametrize("bits", [0, 16, 288])
def test_illegal_bit_lengths_raise(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_instance_code_v0(b"abc", bits)


@pytest.mark.parametrize("source", ["text", 42, io.StringIO("text")])
def test_wrong_input_types_raise_type_error(source: object) -> None:
    with pytest.raises(TypeError):
        gen_instance_code_v0(source)  # type: ignore[arg-type]
