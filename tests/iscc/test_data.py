"""Data-Code equals iscc-core 1.5.0 and iscc-lib for any input, bit length and split into pushes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from isccd.iscc._stream import IO_READ_SIZE
from isccd.iscc.cdc import alg_cdc_params
from isccd.iscc.data import (
    DataHasher,
    DataHasherV0,
    gen_data_code,
    gen_data_code_v0,
    soft_hash_data_v0,
)
from isccd.iscc.exceptions import IsccError
from isccd.iscc.kernels import PYTHON_KERNELS, load_kernels
from tests.iscc._data import PUSH_SIZES, byte_inputs, make_data, split

ic = pytest.importorskip("iscc_core")

BITS = st.sampled_from(range(32, 257, 32))


def reference(data: bytes, bits: int = 64) -> dict[str, str]:
    return dict(ic.gen_data_code_v0(io.BytesIO(data), bits))


@given(byte_inputs(), BITS)
@example(b"", 64)
@example(b"\xff\x00", 64)
def test_matches_reference(data: bytes, bits: int) -> None:
    assert gen_data_code_v0(io.BytesIO(data), bits) == reference(data, bits)
    assert gen_data_code_v0(data, bits) == reference(data, bits)


@pytest.mark.slow
@given(byte_inputs(), st.lists(PUSH_SIZES, min_size=1, max_size=8))
def test_any_split_gives_the_same_code(data: bytes, sizes: list[int]) -> None:
    hasher = DataHasherV0()
    for piece in split(data, sizes):
        hasher.push(piece)
    assert "ISCC:" + hasher.code(256) == reference(data, 256)["iscc"]


@settings(max_examples=4)
@given(
    st.sampled_from(["random", "mixed", "low_entropy"]),
    st.integers(2_000_000, 5_000_000),
    st.integers(0, 2**32 - 1),
    st.lists(PUSH_SIZES, min_size=1, max_size=4),
)
@pytest.mark.slow
def test_megabytes_in_random_pushes(kind: str, size: int, seed: int, sizes: list[int]) -> None:
    data = make_data(kind, size, seed)
    hasher = DataHasherV0()
    for piece in split(data, [*sizes, IO_READ_SIZE]):
        hasher.push(piece)
    assert "ISCC:" + hasher.code(256) == reference(data, 256)["iscc"]


def test_matches_iscc_lib_on_bytes() -> None:
    il = pytest.importorskip("iscc_lib")
    data = make_data("mixed", 1_500_000, seed=3)
    for bits in (64, 128, 256):
        assert gen_data_code_v0(data, bits) == dict(il.gen_data_code_v0(data, bits))


def test_conformance_example_values() -> None:
    # Spec 3.7: empty input hashes one feature, xxh32(b"").
    assert gen_data_code_v0(b"") == {"iscc": "ISCC:GAASL4F2WZY7KBXB"}


def test_streams_without_readinto_are_read_with_read() -> None:
    data = make_data("random", 3 * IO_READ_SIZE + 5, seed=1)

    class ReadOnly:
        def __init__(self) -> None:
            self._inner = io.BytesIO(data)

        def read(self, size: int = -1) -> bytes:
            return self._inner.read(size)

    assert gen_data_code_v0(ReadOnly(), 128) == reference(data, 128)


def test_bytes_like_inputs() -> None:
    data = make_data("random", 20_000, seed=2)
    expected = reference(data)
    assert gen_data_code_v0(bytearray(data)) == expected
    assert gen_data_code_v0(memoryview(data)) == expected
    assert gen_data_code_v0(np.frombuffer(data, dtype=np.uint8)) == expected
    # A non-contiguous view is hashed as the bytes it shows.
    assert gen_data_code_v0(memoryview(data)[::2]) == reference(data[::2])


def test_hasher_takes_initial_data_and_keeps_hashing_after_digest() -> None:
    data = make_data("random", 50_000, seed=4)
    hasher = DataHasher(data[:30_000])
    first = hasher.code()
    assert hasher.code() == first  # digest() does not consume the state
    assert "ISCC:" + first == reference(data[:30_000])["iscc"]
    hasher.push(data[30_000:])
    assert "ISCC:" + hasher.code() == reference(data)["iscc"]


def test_pushing_into_a_reused_buffer_is_safe() -> None:
    data = make_data("random", 100_000, seed=6)
    buffer = bytearray(10_000)
    hasher = DataHasherV0()
    for piece in split(data, [10_000]):
        buffer[: len(piece)] = piece
        hasher.push(memoryview(buffer)[: len(piece)])
        buffer[:] = bytes(len(buffer))  # the hasher must have copied its tail
    assert "ISCC:" + hasher.code() == reference(data)["iscc"]


def test_soft_hash_and_alias() -> None:
    data = make_data("periodic", 40_000, seed=8)
    assert soft_hash_data_v0(io.BytesIO(data)) == ic.soft_hash_data_v0(io.BytesIO(data))
    assert gen_data_code(data, 96) == reference(data, 96)


@given(byte_inputs(max_size=70_000))
def test_soft_hash_of_bytes_at_once_matches_reference(data: bytes) -> None:
    expected = ic.soft_hash_data_v0(io.BytesIO(data))
    assert soft_hash_data_v0(data) == expected
    assert soft_hash_data_v0(memoryview(bytearray(data))) == expected
    buf = np.frombuffer(data, dtype=np.uint8)
    for kernels in (load_kernels(), PYTHON_KERNELS):
        assert kernels.data_digest(buf, alg_cdc_params(1024)) == expected
        assert kernels.data_digest(data, alg_cdc_params(1024)) == expected


@pytest.mark.parametrize("bits", [0, 16, 48, 288, 1024, -64])
def test_illegal_bit_lengths_raise(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_data_code_v0(b"abc", bits)
    with pytest.raises(IsccError, match="multiple of 32"):
        DataHasherV0(b"abc").code(bits)


@pytest.mark.parametrize("bits", [64.0, "64", None, True])
def test_non_int_bits_raise_type_error(bits: object) -> None:
    with pytest.raises(TypeError, match="bits"):
        gen_data_code_v0(b"abc", bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("source", ["text", 42, None, io.StringIO("text")])
def test_wrong_input_types_raise_type_error(source: object) -> None:
    with pytest.raises(TypeError):
        gen_data_code_v0(source)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DataHasherV0().push(source)  # type: ignore[arg-type]
